"""Stage `export`: write the pair as plain Hugging Face model directories (bf16 safetensors + tokenizer files),
reload them with `AutoModelForCausalLM` / `AutoTokenizer` only (no specviz code), measure the held-out acceptance
statistics on the reloaded weights, and write manifest.json and the model card README.md."""
from __future__ import annotations

import json
import platform
import shutil
import time
from pathlib import Path

MAX_TOTAL_MB = 40.0
SHIP_DTYPE = "bfloat16"


def _dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def save_hf(model, tok_dir: Path, out: Path, log) -> None:
    import torch
    from transformers import AutoTokenizer, GenerationConfig

    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    model = model.to("cpu").to(torch.bfloat16)
    model.config._attn_implementation = None
    cfg = model.config
    model.generation_config = GenerationConfig(bos_token_id=cfg.bos_token_id, eos_token_id=cfg.eos_token_id,
                                               pad_token_id=cfg.pad_token_id)
    model.save_pretrained(out, safe_serialization=True)
    AutoTokenizer.from_pretrained(str(tok_dir)).save_pretrained(out)
    log(f"export: wrote {out} ({_dir_bytes(out) / 1e6:.2f} MB)")


def reload(path: Path):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(str(path), dtype=torch.float32).eval()
    return model, AutoTokenizer.from_pretrained(str(path))


def _prompts() -> dict[str, list[str]]:
    from . import WORKLOADS

    out = {}
    for wf in WORKLOADS:
        if wf.exists():
            out[wf.stem] = [json.loads(l)["prompt"] for l in wf.read_text().splitlines() if l.strip()]
    return out


def sample_completions(target, draft, tok, log, n_new: int = 40) -> list[dict]:
    import torch

    rows = []
    for tag, prompts in _prompts().items():
        for prompt in prompts[:4]:
            ids = tok(prompt, return_tensors="pt").input_ids
            row = {"tag": tag, "prompt": prompt}
            for name, m in (("target", target), ("draft", draft)):
                with torch.no_grad():
                    out = m.generate(ids, max_new_tokens=n_new, do_sample=False, pad_token_id=tok.pad_token_id)
                row[name] = tok.decode(out[0, ids.shape[1]:], skip_special_tokens=False)
            rows.append(row)
            log(f"sample [{tag}] {prompt!r}\n  target: {row['target']!r}\n  draft:  {row['draft']!r}")
    return rows


def export(args, work: Path, device, log) -> None:
    import torch

    from .loop import eval_windows, evaluate
    from .models import n_params
    from .stages import _archs, draft_runs, latest_draft_weights, load_draft, load_target, target_runs
    from .tok import load_tokens

    out = args.out_dir
    out.mkdir(parents=True, exist_ok=True)
    tok_dir = work / "tokenizer"
    target = load_target(args, work, "cpu")
    draft = load_draft(args, work, "cpu", target, latest_draft_weights(work))
    counts = {"target": n_params(target), "draft": n_params(draft)}
    save_hf(target, tok_dir, out / "target", log)
    save_hf(draft, tok_dir, out / "draft", log)

    # everything below uses only what was written to disk
    target, tok = reload(out / "target")
    draft, dtok = reload(out / "draft")
    assert tok.get_vocab() == dtok.get_vocab() and tok.eos_token == dtok.eos_token
    splits = ["val_code", "val_prose"] + (["val_gen"] if (work / "data" / "val_gen.bin").exists() else [])
    val = {name: load_tokens(work, name) for name in splits}
    windows = {k: eval_windows(v, 64, args.context) for k, v in val.items()}
    t = time.time()
    shipped = {k: evaluate(draft, w, "cpu", target) for k, w in windows.items()}
    log(f"export: shipped pair on held-out windows: {json.dumps(shipped)} ({time.time() - t:.0f}s)")

    def other_draft(run: str) -> dict | None:
        """Another draft run's weights, rounded like the shipped draft, on the same held-out windows."""
        if not (work / run / "final.pt").exists():
            return None
        other = load_draft(args, work, "cpu", target, work / run / "final.pt")
        other = other.to(torch.bfloat16).to(torch.float32).eval()
        result = {k: evaluate(other, w, "cpu", target) for k, w in windows.items()}
        log(f"export: {run} draft on held-out windows: {json.dumps(result)}")
        return result

    ce_only = other_draft("draft_ce")
    before_tuning = other_draft("draft_kd") if (work / "draft_gen" / "final.pt").exists() else None
    samples = sample_completions(target, draft, tok, log)
    (work / "samples.json").write_text(json.dumps(samples, indent=2))

    corpus = json.loads((work / "corpus" / "manifest.json").read_text())
    corpus.pop("val_ids", None)
    tokens = json.loads((work / "data" / "info.json").read_text())
    runs = [r.name for r in target_runs(work) + draft_runs(work)] + ["draft_ce"]
    results = {n: json.loads((work / n / "result.json").read_text()) for n in runs if (work / n / "result.json").exists()}
    for r in results.values():
        r.pop("history", None)
    draft_eval = json.loads((work / "draft_eval.json").read_text()) if (work / "draft_eval.json").exists() else {}
    target_arch, draft_arch = _archs(args)
    sizes = {"target_bytes": _dir_bytes(out / "target"), "draft_bytes": _dir_bytes(out / "draft")}
    manifest = {
        "created": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "recipe": "python -m specviz train-tiny (specviz/train)",
        "hardware": {"machine": platform.machine(), "processor": platform.processor() or None,
                     "torch_threads": torch.get_num_threads(), "device": str(device),
                     "torch": torch.__version__, "python": platform.python_version()},
        "dtype_on_disk": SHIP_DTYPE,
        "corpus": corpus, "tokens": tokens,
        "models": {"target": {**target_arch.as_dict(), "parameters": counts["target"]},
                   "draft": {**draft_arch.as_dict(), "parameters": counts["draft"],
                             "init": "target embeddings + layer 0 + final norm",
                             "training_data": f"{args.draft_data} documents of the training split"
                                              + (", then continuations the target wrote" if before_tuning else "")}},
        "training": results, "draft_comparison": draft_eval,
        "held_out": {"shipped": shipped, "ce_only_control": ce_only, "before_tuning": before_tuning},
        "sizes": sizes,
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2))
    (out / "README.md").write_text(model_card(manifest))
    total = _dir_bytes(out) / 1e6
    log(f"export: {out} holds {total:.2f} MB")
    if total > MAX_TOTAL_MB:
        raise SystemExit(f"export too large: {total:.1f} MB > {MAX_TOTAL_MB} MB")


def _fmt(x, nd=3):
    return "n/a" if x is None else f"{x:.{nd}f}"


def _tuning(comparison: dict, before: dict | None, after: dict, context: int) -> str:
    """The card's paragraph on the second distillation, on text the target wrote (empty if there was none)."""
    tuned = comparison.get("tuned")
    if not tuned or not before or "val_gen" not in before:
        return ""
    before, after = before["val_gen"], after["val_gen"]
    return (f"\nThe shipped draft was then distilled {tuned['steps']} steps more (same loss) on\n"
            f"{tuned['generated_tokens']:,} tokens that the target wrote itself after {context // 8}-token code prefixes\n"
            f"(half greedy, half sampled at T = 1), the distribution it drafts for. On held-out continuations of that\n"
            f"kind (after val_code prefixes): α {_fmt(before['alpha'])} → {_fmt(after['alpha'])}, greedy agreement "
            f"{_fmt(before['greedy_agreement'])} → {_fmt(after['greedy_agreement'])}.\n"
            f"The rows above are on human-written files.")


def _tune_args(run: dict, tuned: dict | None) -> str:
    if not run or not tuned:
        return ""
    budget = run["config"]["budget_s"] / 60
    return (f" \\\n    --draft-tune-minutes {budget:.0f}" if run["config"]["max_steps"] is None
            else f" \\\n    --draft-tune-steps {run['max_steps']}") + f" --gen-tokens {tuned['gen_tokens']}"


def model_card(m: dict) -> str:
    c, tk, tr = m["corpus"], m["tokens"], m["training"]
    t, d = m["models"]["target"], m["models"]["draft"]
    sh, base = m["held_out"]["shipped"], m["held_out"]["ce_only_control"] or {}
    tgt = tr.get("target", {})
    extensions = [(name, r) for name, r in tr.items() if name.startswith("target_ext")]
    kd, ce, gen = tr.get("draft_kd", {}), tr.get("draft_ce", {}), tr.get("draft_gen", {})
    tuned = m["draft_comparison"].get("tuned")
    kd_only = m["held_out"].get("before_tuning")  # the distilled draft before its second distillation, if it had one
    draft_data = d.get("training_data", "all documents of the training split")
    target_minutes = sum(r.get("train_minutes", 0) for r in [tgt, *(r for _, r in extensions)])
    extend = "".join(f" --extend-target-minutes {r['config']['budget_s'] / 60:.0f}" if r["config"]["max_steps"] is None
                     else f" --extend-target-steps {r['max_steps']}" for _, r in extensions)  # fmt: skip
    sz = m["sizes"]

    def row(name, ev):
        return (f"| {name} | {_fmt(ev.get('val_code', {}).get('ce'))} | {_fmt(ev.get('val_code', {}).get('alpha'))} | "
                f"{_fmt(ev.get('val_code', {}).get('greedy_agreement'))} | {_fmt(ev.get('val_prose', {}).get('ce'))} | "
                f"{_fmt(ev.get('val_prose', {}).get('alpha'))} | "
                f"{_fmt(ev.get('val_prose', {}).get('greedy_agreement'))} |")

    init = m["draft_comparison"].get("init", {})
    return f"""# pystdlib: a tiny draft/target pair for teaching speculative decoding

Two small Llama-style causal language models (`LlamaForCausalLM`) that share one tokenizer, trained on this
machine by `python -m specviz train-tiny` (code in `specviz/train/`). They are specviz's bundled offline pair:
`target/` is the model whose distribution p speculative decoding must reproduce, `draft/` proposes tokens (q).
Both load with plain `transformers`, no specviz code and no remote code:

```python
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer
tok = AutoTokenizer.from_pretrained("assets/models/pystdlib/target")
target = AutoModelForCausalLM.from_pretrained("assets/models/pystdlib/target", dtype=torch.float32)
draft = AutoModelForCausalLM.from_pretrained("assets/models/pystdlib/draft", dtype=torch.float32)
```

**Weights are stored in bfloat16** (to keep the pair under {MAX_TOTAL_MB:.0f} MB); on CPU, load them as float32
as above (specviz's default on CPU; `--dtype bfloat16` runs them as stored). Numbers below are for the float32
cast of the stored weights unless marked bfloat16.

## Intended use
Teaching and demonstrating speculative decoding: the pair is small enough to run token by token on a laptop CPU
and different enough in depth that the draft is cheap (c = draft step / target step is about 0.2 with HF eager at
batch 1) yet agrees with the target often on code. It is **not** a useful code or text model.

## Limitations
- It only knows Python: the standard library's source and Python's own documentation. Anything else (other
  languages, general knowledge, chat) gets fluent-looking nonsense.
- Trained for about {_fmt((target_minutes + sum(r.get('train_minutes', 0) for r in (kd, gen, ce))) / 60, 1)} CPU-core hours; completions are plausible in shape
  (indentation, names, docstrings) but often wrong or repetitive. Judge it as a teaching prop.
- Context length {t['context']} tokens (RoPE; positions beyond it were never trained).
- No safety tuning of any kind.

## Models
| | layers | width | heads | MLP | parameters (tied embeddings) | on disk ({m['dtype_on_disk']}) |
|---|---|---|---|---|---|---|
| target | {t['layers']} | {t['width']} | {t['heads']} | {t['mlp']} | {t['parameters'] / 1e6:.2f} M | {sz['target_bytes'] / 1e6:.1f} MB |
| draft | {d['layers']} | {d['width']} | {d['heads']} | {d['mlp']} | {d['parameters'] / 1e6:.2f} M | {sz['draft_bytes'] / 1e6:.1f} MB |

The draft was initialised from the target's token embeddings (tied with the LM head), first decoder layer and
final norm, then trained on the {draft_data}: a specialist, as production drafts trained on their
target's traffic are, so it agrees with the target more on code than on prose (the contrast the sample workloads
teach). `eos_token_id` = `bos_token_id` = `<|endoftext|>` (id 0), `pad_token_id` = `<|pad|>`
(id 1), set in `config.json` and `generation_config.json`.

## Tokenizer
Byte-level BPE trained with `tokenizers` on the training split, vocabulary {tk['vocab_size']} (incl. the two
special tokens), no normaliser, so `decode(encode(text)) == text` for any text, indentation and newlines
included (checked by the recipe). Saved as a `PreTrainedTokenizerFast` (`tokenizer.json`) in both directories;
the two copies are identical. About {tk['splits']['train']['bytes_per_token']} bytes per token on the corpus.

## Corpus
Gathered deterministically from what every machine of this kind has offline; not redistributed here.
- **Code**: the Python {m['hardware']['python']} standard library (`sysconfig.get_paths()["stdlib"]`), sorted
  file list, leaving out tests, site-packages, GUI/demo/legacy packages ({', '.join(c['excluded_parts'])}), files
  over 130 kB, table-like generated files and duplicates; licence header comments stripped, tabs expanded,
  trailing spaces removed. {c['all_code']['documents']} files, {c['all_code']['bytes'] / 1e6:.2f} MB,
  sha256 `{c['all_code']['sha256'][:16]}…`.
- **Prose**: the {c['prose']['pydoc_topics']} documentation topics in `pydoc_data.topics`, plus
  {c['prose']['doc_pages']} pages (tutorial, FAQ, HOWTOs, language reference, glossary) of Debian's
  `python3.11-doc` HTML converted to text with `html.parser` (used where installed), paragraph-deduplicated.
  {c['all_prose']['documents']} documents, {c['all_prose']['bytes'] / 1e6:.2f} MB, sha256
  `{c['all_prose']['sha256'][:16]}…`.
- **Split**: a hash of each document's id holds out files for validation:
  train {c['splits']['train']['documents']} documents ({tk['splits']['train']['tokens']:,} tokens, training order
  a seeded shuffle), val_code {c['splits']['val_code']['documents']} files ({tk['splits']['val_code']['tokens']:,}
  tokens), val_prose {c['splits']['val_prose']['documents']} documents ({tk['splits']['val_prose']['tokens']:,}
  tokens). Full record in `manifest.json`.

## Training
Hardware: {m['hardware']['machine']} CPU (torch threads per run in the table), device
`{m['hardware']['device']}`, torch {m['hardware']['torch']}. AdamW (β 0.9/0.95, weight decay 0.1), cosine LR
with 100 warm-up steps, gradient clip 1.0, random {t['context']}-token windows, batch
{tgt.get('config', {}).get('batch_size', 'n/a')} windows, float32, seed {tgt.get('config', {}).get('seed', 'n/a')}.

| run | steps | tokens seen | minutes | threads | tokens/s | final train CE | val_code CE | val_prose CE |
|---|---|---|---|---|---|---|---|---|
""" + "\n".join(
        f"| {name} | {r.get('steps')} | {r.get('tokens_seen', 0):,} | {r.get('train_minutes')} | {r.get('threads')} | "
        f"{r.get('tokens_per_s')} | "
        f"{_fmt(r.get('final_train_loss'))} | {_fmt(r.get('last_eval', {}).get('val_code', {}).get('ce'))} | "
        f"{_fmt(r.get('last_eval', {}).get('val_prose', {}).get('ce'))} |"
        for name, r in (("target", tgt), *((f"target, extension {n[len('target_ext'):]} (fresh cosine from "
                                            f"{r.get('config', {}).get('lr')})", r) for n, r in extensions),
                        ("draft (distilled)", kd), ("draft, distilled on the target's continuations", gen),
                        ("draft CE-only control", ce)) if r
    ) + f"""

The draft's loss is a·CE(data) + (1 − a)·KL(p_target ‖ q_draft) at temperature 1 with a =
{kd.get('config', {}).get('ce_weight', 'n/a')}, the target frozen. The control run uses the same initialisation,
data order and step count with a = 1 (plain cross-entropy).

## Distillation gain (teacher-forced, held-out files)
α = mean over positions of Σₓ min(p(x), q(x)) (the acceptance rate of sampling at T = 1); greedy agreement =
fraction of positions where argmax q = argmax p (≈ greedy acceptance). Both from one teacher-forced pass over
held-out windows; CE in nats/token.

| draft | code CE | code α | code greedy | prose CE | prose α | prose greedy |
|---|---|---|---|---|---|---|
{row('before training (init from target)', init)}
{row('CE only (control)', base)}
{row('distilled on code files', kd_only) + chr(10) if kd_only else ''}{row('shipped', sh)}
{_tuning(m["draft_comparison"], kd_only, sh, t['context'])}

Target CE on the same windows: code {_fmt(sh.get('val_code', {}).get('teacher_ce'))}, prose
{_fmt(sh.get('val_prose', {}).get('teacher_ce'))}.

## Measured α on sample workloads
<!-- PLACEHOLDER: to be filled with specviz's engine (assets/workloads/code.jsonl, prose.jsonl; K = 4;
greedy and T = 1) -->
_TODO: measured with the engine._

## Sample completions
<!-- PLACEHOLDER: to be filled with specviz's engine -->
_TODO: sample completions from the engine._

## Reproduce
```
python -m specviz train-tiny all --threads 1 --target-minutes 78{extend} \\
    --draft-minutes 24 --draft-data {draft_data.split()[0]}{_tune_args(gen, tuned)}
```
The work dir (default `~/.cache/specviz/train-tiny`) holds the corpus, token arrays and checkpoints; rerunning
resumes. Step counts were derived from the time budgets on this machine; pass `--target-steps
{tgt.get('max_steps')}`{''.join(f", `--extend-target-steps {r.get('max_steps')}`" for _, r in extensions[:1])}, \
`--draft-steps {kd.get('max_steps')}`{f" and `--draft-tune-steps {gen.get('max_steps')}`" if gen else ""} to repeat the
same schedule elsewhere."""
