"""The model card, README.md beside the pair: rendered from manifest.json (what training did) and measurements.json
(what specviz measured on the exported pair), and from nothing else, so rerunning the recipe or `train-tiny card`
rewrites all of it.

    python -m specviz train-tiny card              measure (measurements.py), write measurements.json, render
    python -m specviz train-tiny card --rerender   render again from the measurements.json already there
"""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

from .corpus import MAX_FILE_BYTES
from .measurements import CardSettings, measure_all
from .paths import MAX_TOTAL_MB

LANE_NAMES = {
    "plain": "plain",
    "draft": "specviz, draft model",
    "ngram": "specviz, n-gram lookup",
    "hf_assisted": "HF assisted generation",
    "hf_prompt_lookup": "HF prompt lookup",
}


def make_card(pair_dir: Path, settings: CardSettings, log, rerender: bool = False) -> str:
    """Measure the pair (unless rerender), write measurements.json, and write README.md from it and manifest.json."""
    path = pair_dir / "measurements.json"
    if not (pair_dir / "manifest.json").exists():
        raise SystemExit(f"card: no manifest.json in {pair_dir}: export the pair first (train-tiny export)")
    if rerender:
        if not path.exists():
            raise SystemExit(f"card: {path} does not exist: run `train-tiny card` without --rerender to measure")
    else:
        path.write_text(
            json.dumps(measure_all(pair_dir, settings, log), indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
        )
    card = render(
        json.loads((pair_dir / "manifest.json").read_text(encoding="utf-8")),
        json.loads(path.read_text(encoding="utf-8")),
    )
    (pair_dir / "README.md").write_text(card, encoding="utf-8")
    log(f"card: wrote {pair_dir / 'README.md'} from manifest.json and {path.name}")
    return card


def _fmt(x, nd=3):
    return "n/a" if x is None else f"{x:.{nd}f}"


def _dash(x, spec: str) -> str:
    return "–" if x is None else format(x, spec)


def _wrap(text: str, width: int = 115) -> str:
    """One paragraph that holds measured values, wrapped like the rest of the card (narrower where a line would
    start with something Markdown reads as a list item, a heading or a quote)."""
    lines = textwrap.wrap(" ".join(text.split()), width, break_long_words=False, break_on_hyphens=False)
    if width > 80 and any(re.match(r"([-+*>#]|\d+[.)])( |$)", line) for line in lines[1:]):
        return _wrap(text, width - 1)
    return "\n".join(lines)


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _decoding(t: float) -> str:
    return "greedy" if t == 0 else f"T = {t:g}"


def render(m: dict, ms: dict) -> str:
    """The whole card: training facts from the manifest `m`, measured figures from the measurements `ms`."""
    return "\n".join(
        [
            _intro(m, ms),
            _models(m),
            _tokenizer_and_corpus(m),
            _training(m),
            _distillation(m),
            _acceptance(m, ms),
            _speed(ms),
            _samples(ms),
            _reproduce(m, ms),
        ]
    )


def _intro(m: dict, ms: dict) -> str:
    t = m["models"]["target"]
    tr = m["training"]
    minutes = sum(r.get("train_minutes", 0) for r in tr.values())
    use = _wrap(f"""Teaching and demonstrating speculative decoding: the pair is small enough to run token by token on a
laptop CPU and different enough in depth that the draft is cheap ({_cheapest_cost(ms)}) yet agrees with the target
often on code. It is **not** a useful code or text model.""")
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

**Weights are stored in {m["dtype_on_disk"]}** (to keep the pair under {MAX_TOTAL_MB:.0f} MB); on CPU, load them as float32
as above (specviz's default on CPU; `--dtype bfloat16` runs them as stored). Numbers below are for the float32
cast of the stored weights unless marked bfloat16. The trained and measured figures below come from
`manifest.json` (training) and `measurements.json` (measured with specviz on {ms["environment"]["cpu"]});
`python -m specviz train-tiny card` writes both this card and `measurements.json`.

## Intended use
{use}

## Limitations
- It only knows Python: the standard library's source and Python's own documentation. Anything else (other
  languages, general knowledge, chat) gets fluent-looking nonsense.
- Trained for about {_fmt(minutes / 60, 1)} CPU-core hours; completions are plausible in shape
  (indentation, names, docstrings) but often wrong or repetitive. Judge it as a teaching prop.
- Context length {t["context"]} tokens (RoPE; positions beyond it were never trained).
- No safety tuning of any kind.
"""


def _cheapest_cost(ms: dict) -> str:
    """The intro's c: measured by the bench, float32 first."""
    runs = sorted(ms["speed"], key=lambda r: r["dtype"] != "float32")
    parts = [f"{_fmt(r['costs']['c'], 2)} in {r['dtype']}" for r in runs if r["costs"]["c"] is not None]
    return (
        "c = draft step / target step measured at " + " and ".join(parts) + " with HF eager at batch 1"
        if parts
        else "one layer against ten"
    )


def _models(m: dict) -> str:
    t, d, sz = m["models"]["target"], m["models"]["draft"], m["sizes"]
    draft_data = d.get("training_data", "all documents of the training split")
    return f"""## Models
| | layers | width | heads | MLP | parameters (tied embeddings) | on disk ({m["dtype_on_disk"]}) |
|---|---|---|---|---|---|---|
| target | {t["layers"]} | {t["width"]} | {t["heads"]} | {t["mlp"]} | {t["parameters"] / 1e6:.2f} M | {sz["target_bytes"] / 1e6:.1f} MB |
| draft | {d["layers"]} | {d["width"]} | {d["heads"]} | {d["mlp"]} | {d["parameters"] / 1e6:.2f} M | {sz["draft_bytes"] / 1e6:.1f} MB |

The draft was initialised from the target's token embeddings (tied with the LM head), first decoder layer and
final norm, then trained on the {draft_data}: a specialist, as production drafts trained on their
target's traffic are, so it agrees with the target more on code than on prose (the contrast the sample workloads
teach). `eos_token_id` = `bos_token_id` = `<|endoftext|>` (id 0), `pad_token_id` = `<|pad|>`
(id 1), set in `config.json` and `generation_config.json`.
"""


def _tokenizer_and_corpus(m: dict) -> str:
    c, tk = m["corpus"], m["tokens"]
    return f"""## Tokenizer
Byte-level BPE trained with `tokenizers` on the training split, vocabulary {tk["vocab_size"]} (incl. the two
special tokens), no normaliser, so `decode(encode(text)) == text` for any text, indentation and newlines
included (checked by the recipe). Saved as a `PreTrainedTokenizerFast` (`tokenizer.json`) in both directories;
the two copies are identical. About {tk["splits"]["train"]["bytes_per_token"]} bytes per token on the corpus.

## Corpus
Gathered deterministically from what every machine of this kind has offline; not redistributed here.
- **Code**: the Python {m["hardware"]["python"]} standard library (`sysconfig.get_paths()["stdlib"]`), sorted
  file list, leaving out tests, site-packages, GUI/demo/legacy packages ({", ".join(c["excluded_parts"])}), files
  over {MAX_FILE_BYTES / 1e3:.0f} kB, table-like generated files and duplicates; licence header comments stripped, tabs expanded,
  trailing spaces removed. {c["all_code"]["documents"]} files, {c["all_code"]["bytes"] / 1e6:.2f} MB,
  sha256 `{c["all_code"]["sha256"][:16]}…`.
- **Prose**: the {c["prose"]["pydoc_topics"]} documentation topics in `pydoc_data.topics`, plus
  {c["prose"]["doc_pages"]} pages (tutorial, FAQ, HOWTOs, language reference, glossary) of Debian's
  `python3.11-doc` HTML converted to text with `html.parser` (used where installed), paragraph-deduplicated.
  {c["all_prose"]["documents"]} documents, {c["all_prose"]["bytes"] / 1e6:.2f} MB, sha256
  `{c["all_prose"]["sha256"][:16]}…`.
- **Split**: a hash of each document's id holds out files for validation:
  train {c["splits"]["train"]["documents"]} documents ({tk["splits"]["train"]["tokens"]:,} tokens, training order
  a seeded shuffle), val_code {c["splits"]["val_code"]["documents"]} files ({tk["splits"]["val_code"]["tokens"]:,}
  tokens), val_prose {c["splits"]["val_prose"]["documents"]} documents ({tk["splits"]["val_prose"]["tokens"]:,}
  tokens). Full record in `manifest.json`.
"""


def _extensions(tr: dict) -> list[tuple[str, dict]]:
    return [(name, r) for name, r in tr.items() if name.startswith("target_ext")]


def _training(m: dict) -> str:
    tr = m["training"]
    tgt, kd = tr.get("target", {}), tr.get("draft_kd", {})
    cfg = tgt.get("config", {})
    runs = (
        ("target", tgt),
        *(
            (f"target, extension {n[len('target_ext') :]} (fresh cosine from {r.get('config', {}).get('lr')})", r)
            for n, r in _extensions(tr)
        ),
        ("draft (distilled)", kd),
        ("draft, distilled on the target's continuations", tr.get("draft_gen", {})),
        ("draft CE-only control", tr.get("draft_ce", {})),
    )
    rows = "\n".join(
        f"| {name} | {r.get('steps')} | {r.get('tokens_seen', 0):,} | {r.get('train_minutes')} | {r.get('threads')} | "
        f"{r.get('tokens_per_s')} | "
        f"{_fmt(r.get('final_train_loss'))} | {_fmt(r.get('last_eval', {}).get('val_code', {}).get('ce'))} | "
        f"{_fmt(r.get('last_eval', {}).get('val_prose', {}).get('ce'))} |"
        for name, r in runs
        if r
    )
    return f"""## Training
Hardware: {m["hardware"]["machine"]} CPU (torch threads per run in the table), device
`{m["hardware"]["device"]}`, torch {m["hardware"]["torch"]}. AdamW (β 0.9/0.95, weight decay {cfg.get("weight_decay", "n/a")}), cosine LR
with {cfg.get("warmup_steps", "n/a")} warm-up steps, gradient clip {cfg.get("grad_clip", "n/a")}, random {m["models"]["target"]["context"]}-token windows, batch
{cfg.get("batch_size", "n/a")} windows, float32, seed {cfg.get("seed", "n/a")}.

| run | steps | tokens seen | minutes | threads | tokens/s | final train CE | val_code CE | val_prose CE |
|---|---|---|---|---|---|---|---|---|
{rows}

The draft's loss is a·CE(data) + (1 − a)·KL(p_target ‖ q_draft) at temperature 1 with a =
{kd.get("config", {}).get("ce_weight", "n/a")}, the target frozen. The control run uses the same initialisation,
data order and step count with a = 1 (plain cross-entropy).
"""


def _distillation(m: dict) -> str:
    sh, base = m["held_out"]["shipped"], m["held_out"]["ce_only_control"] or {}
    kd_only = m["held_out"].get("before_tuning")  # the distilled draft before its second distillation, if it had one
    init = m["draft_comparison"].get("init", {})

    def row(name, ev):
        code, prose = ev.get("val_code", {}), ev.get("val_prose", {})
        return (
            f"| {name} | {_fmt(code.get('ce'))} | {_fmt(code.get('overlap'))} | {_fmt(code.get('greedy_agreement'))} | "
            f"{_fmt(prose.get('ce'))} | {_fmt(prose.get('overlap'))} | {_fmt(prose.get('greedy_agreement'))} |"
        )

    rows = [row("before training (init from target)", init), row("CE only (control)", base)]
    rows += [row("distilled on code files", kd_only)] if kd_only else []
    rows += [row("shipped", sh)]
    return f"""## Distillation gain (teacher-forced, held-out files)
overlap = mean over positions of Σₓ min(p(x), q(x)), the expected α when sampling at T = 1; greedy agreement =
fraction of positions where argmax q = argmax p (≈ greedy acceptance). Both from one teacher-forced pass over
held-out windows; CE in nats/token.

| draft | code CE | code overlap | code greedy | prose CE | prose overlap | prose greedy |
|---|---|---|---|---|---|---|
{chr(10).join(rows)}
{_tuning(m["draft_comparison"], kd_only, sh, m["models"]["target"]["context"])}
Target CE on the same windows: code {_fmt(sh.get("val_code", {}).get("teacher_ce"))}, prose
{_fmt(sh.get("val_prose", {}).get("teacher_ce"))}.
"""


def _tuning(comparison: dict, before: dict | None, after: dict, context: int) -> str:
    """The card's paragraph on the second distillation, on text the target wrote (empty if there was none)."""
    tuned = comparison.get("tuned")
    if not tuned or not before or "val_gen" not in before:
        return ""
    before, after = before["val_gen"], after["val_gen"]
    return (
        f"\nThe shipped draft was then distilled {tuned['steps']} steps more (same loss) on\n"
        f"{tuned['generated_tokens']:,} tokens that the target wrote itself after {context // 8}-token code prefixes\n"
        f"(half greedy, half sampled at T = 1), the distribution it drafts for. On held-out continuations of that\n"
        f"kind (after val_code prefixes): overlap {_fmt(before['overlap'])} → {_fmt(after['overlap'])}, greedy agreement "
        f"{_fmt(before['greedy_agreement'])} → {_fmt(after['greedy_agreement'])}.\n"
        f"The rows above are on human-written files.\n"
    )


def _where(ms: dict) -> str:
    env = ms["environment"]
    return (
        f"{env['cpu']} (torch CPU capability {env['cpu_capability']}, {_n(env['cores'], 'core')}, "
        f"{_n(env['torch_threads'], 'torch thread')}, torch {env['torch']})"
    )


def _acceptance(m: dict, ms: dict) -> str:
    a = ms["acceptance"]
    rows, seen = [], set()
    for r in a["rows"]:
        w = ms["workloads"][r["workload"]]
        first = r["workload"] not in seen
        seen.add(r["workload"])
        name = (
            (
                f"{r['workload']} ({_n(r['prompts'], 'held-out prompt')}"
                + (f", the first of {w['prompts']}" if r["prompts"] < w["prompts"] else "")
                + ")"
            )
            if first
            else r["workload"]
        )
        lo, hi = r["alpha_ci"]
        rows.append(
            f"| {name} | {_decoding(r['temperature'])} | **{_fmt(r['alpha'], 2)}** | {lo:.2f}–{hi:.2f} | "
            f"{_fmt(r['acceptance_rate'], 2)} | {_fmt(r['tau'], 2)} | {r['speedup']:.2f}x |"
        )
    commands = "\n".join(r["command"] for r in a["rows"])
    tuned = _tuned_note() if m["draft_comparison"].get("tuned") else ""
    setup = _wrap(f"""With specviz's engine, K = {a["k"]}, {a["max_new_tokens"]} new tokens per prompt, each prompt also
decoded plainly in the same run, {a["dtype"]}, on {_where(ms)}:""")
    return f"""## Measured α on sample workloads
{setup}
```
{commands}
```
α = accepted / judged (the per-token acceptance probability of the paper's formulas), pooled over prompts, with a
95% bootstrap interval over prompts; the acceptance rate is vLLM's accepted / proposed; τ = tokens committed per
round. The prompts are held out: the recipe checks that none of them occurs in the corpus.

| workload | decoding | α | 95% CI | acceptance rate | τ | speedup vs plain ({a["max_new_tokens"]} tokens, {a["dtype"]}) |
|---|---|---|---|---|---|---|
{chr(10).join(rows)}

{_wrap(" ".join(filter(None, (_contrast(a["rows"]), tuned))))}
"""


def _tuned_note() -> str:
    return (
        "The draft's second distillation was on text the target wrote after code prefixes (half of it greedy): "
        "greedy speculative decoding checks the draft against the target's own greedy text, the kind of text it "
        "was tuned on."
    )


def _contrast(rows: list[dict]) -> str:
    """Code against prose at each temperature, and whether their intervals overlap."""
    by = {(r["workload"], r["temperature"]): r for r in rows}
    pairs = [
        (by["prose", t], by["code", t])
        for t in dict.fromkeys(r["temperature"] for r in rows)
        if ("code", t) in by and ("prose", t) in by
    ]
    if not pairs:
        return ""
    parts = []
    for prose, code in pairs:
        overlap = prose["alpha_ci"][1] >= code["alpha_ci"][0] and code["alpha_ci"][1] >= prose["alpha_ci"][0]
        parts.append(
            f"{_decoding(code['temperature'])} {prose['alpha']:.2f} vs {code['alpha']:.2f} (the intervals "
            f"{'overlap' if overlap else 'do not overlap'})"
        )
    harder = all(p["alpha"] < c["alpha"] for p, c in pairs)
    return f"{'Prose is harder than code' if harder else 'Prose against code'} for this draft: {', '.join(parts)}."


def _speed(ms: dict) -> str:
    runs = ms["speed"]
    first = runs[0]
    tables = "\n\n".join(_speed_table(r) for r in runs)
    caption = f"""On {_where(ms)}, measured {ms["measured"]}. Every lane at every K against plain decoding, greedy,
on the first {_n(first["prompts"], "prompt")} of `assets/workloads/code.jsonl`, {first["max_new_tokens"]} new tokens
each. Tokens/s are medians over prompts; speedup is the median per-prompt ratio to plain decoding in the same run;
α = accepted / judged; c and v(K) are timed by the bench itself (table below); predicted = τ / (drafts per round · c
+ v(K)); efficiency = measured / predicted, what the decoding loop loses beyond the model passes; "= plain": the
output equals plain decoding on every prompt (in bfloat16 a verify pass over K + 1 tokens rounds differently from
one-token steps, so near-ties can flip and greedy output can part from plain decoding). Timings move from run to
run on a shared machine; α and τ do not."""
    return f"""## Measured speed ({ms["environment"]["cpu"]})
{_wrap(caption)}

{tables}

{_costs(runs)}
"""


def _speed_table(run: dict) -> str:
    order = list(LANE_NAMES)
    rows = sorted(run["results"], key=lambda r: (order.index(r["method"]) if r["method"] in order else 99, r["k"]))
    drafts = [r for r in rows if r["method"] == "draft"]
    best = max(drafts, key=lambda r: r["speedup_vs_plain"]) if drafts else None
    lines = [
        f"| {LANE_NAMES.get(r['method'], r['method'])} | {r['k'] or '–'} | {r['tokens_per_s']:.1f} | "
        + (f"**{r['speedup_vs_plain']:.2f}x**" if r is best else f"{r['speedup_vs_plain']:.2f}x")
        + f" | {_dash(r['alpha'], '.2f')} | {_dash(r['tau'], '.2f')} | {_dash(r['c'], '.3g')} | "
        f"{_dash(r['verify_cost'], '.2f')} | {_dash(r['predicted_speedup'], '.2f')} | {_dash(r['efficiency'], '.2f')} | "
        f"{'yes' if r['identical_to_plain'] else 'no'} |"
        for r in rows
    ]
    return f"""### {run["dtype"]}
`{run["command"]}`

| method | K | tokens/s | speedup vs plain | α | τ | c | v(K) | predicted | efficiency | = plain |
|---|---|---|---|---|---|---|---|---|---|---|
""" + "\n".join(lines)


def _costs(runs: list[dict]) -> str:
    k_max = max(len(r["costs"]["verify_relative"]) for r in runs)
    head = (
        "| precision | target step (ms) | draft step (ms) | c | "
        + " | ".join(f"v({k})" for k in range(1, k_max + 1))
        + " |\n|---|---|---|---|"
        + "---|" * k_max
    )
    rows = "\n".join(
        f"| {r['dtype']} | {r['costs']['target_step_ms']:.2f} | {_dash(r['costs']['draft_step_ms'], '.2f')} | "
        f"{_dash(r['costs']['c'], '.3f')} | " + " | ".join(f"{v:.2f}" for v in r["costs"]["verify_relative"]) + " |"
        for r in runs
    )
    c0 = runs[0]["costs"]
    return f"""### Step costs
c = draft step / target step; v(K) = one verify pass over 1 + K tokens, in target steps. Medians of
{c0["repeats"]} interleaved repeats at a {c0["context_tokens"]}-token context, timed by each bench run above.

{head}
{rows}"""


def _code_span(text: str) -> str:
    return f"`` {text} ``" if "`" in text else f"`{text}`"


def _samples(ms: dict) -> str:
    s = ms["samples"]
    items = []
    for row in s["rows"]:
        prompt = " / ".join(_code_span(line.strip()) for line in row["prompt"].splitlines() if line.strip())
        fence = "~~~" if "```" in row["completion"] else "```"
        body = "\n".join(("  " + line).rstrip() for line in row["completion"].lstrip("\n").rstrip().split("\n"))
        items.append(f"- **{row['label']}**, prompt {prompt} →\n  {fence}\n{body}\n  {fence}")
    code = ms["workloads"].get("code")
    newline = (
        (
            f" ({code['prompts_ending_in_newline']} of the {code['prompts']} prompts of `{code['file']}` end that "
            f"way; the measurements above include them)"
        )
        if code
        else ""
    )
    judgement = _wrap(f"""Python-shaped (indentation, methods, docstrings, guard clauses) and recognisably
documentation-style English, but repetitive and often meaningless: a teaching prop. End a code prompt at the colon,
not after a newline: this tokenizer merges a newline with the next line's indentation, so after a bare newline both
models tend to start a new top-level `def`{newline}.""")
    return f"""## Sample completions
Greedy, {s["max_new_tokens"]} new tokens, the target alone, {s["dtype"]}: `{s["command"]}`.

{chr(10).join(items) if items else "(none measured)"}

{judgement}
"""


def _reproduce(m: dict, ms: dict) -> str:
    tr = m["training"]
    tgt, kd, ce, gen = (tr.get(n, {}) for n in ("target", "draft_kd", "draft_ce", "draft_gen"))
    extensions = _extensions(tr)
    tuned = m["draft_comparison"].get("tuned")
    draft_data = m["models"]["draft"].get("training_data", "all").split()[0]
    draft_minutes = (kd.get("config", {}).get("budget_s", 0) + ce.get("config", {}).get("budget_s", 0)) / 60

    def budget(flag: str, run: dict) -> str:
        cfg = run.get("config", {})
        return (
            f"--{flag}-minutes {cfg['budget_s'] / 60:.0f}"
            if cfg.get("max_steps") is None
            else f"--{flag}-steps {run['max_steps']}"
        )

    extend = "".join(f" {budget('extend-target', r)}" for _, r in extensions)
    tune = f" \\\n    {budget('draft-tune', gen)} --gen-tokens {tuned['gen_tokens']}" if gen and tuned else ""
    steps = [
        f"`--target-steps {tgt.get('max_steps')}`",
        *(f"`--extend-target-steps {r.get('max_steps')}`" for _, r in extensions[:1]),
        f"`--draft-steps {kd.get('max_steps')}`",
        *([f"`--draft-tune-steps {gen.get('max_steps')}`"] if gen else []),
    ]
    notes = _wrap(f"""The work dir (default `~/.cache/specviz/train-tiny`) holds the corpus, token arrays and
checkpoints; rerunning resumes. Step counts were derived from the time budgets on this machine; pass
{", ".join(steps[:-1])} and {steps[-1]} to repeat the same schedule elsewhere. Measuring for this card took
{ms["duration_min"]} min; add `--rerender` to the card command to rewrite the card from `manifest.json` and
`measurements.json` without measuring.""")
    return f"""## Reproduce
Train, export (which ends by measuring the pair and writing this card), then only measure and write the card:
```
python -m specviz train-tiny all --threads {tgt.get("threads")} {budget("target", tgt)}{extend} \\
    --draft-minutes {draft_minutes:.0f} --draft-data {draft_data}{tune}
{card_command(ms["settings"])}
```
{notes}
"""


CARD_FLAGS = {
    "workloads": "--card-workloads",
    "prompts": "--card-prompts",
    "temperatures": "--card-temperatures",
    "k": "--card-k",
    "max_new_tokens": "--card-tokens",
    "bench_ks": "--card-bench-ks",
    "bench_tokens": "--card-bench-tokens",
    "bench_prompts": "--card-bench-prompts",
    "dtypes": "--card-dtypes",
    "samples": "--card-samples",
    "sample_tokens": "--card-sample-tokens",
    "threads": "--threads",
}


def card_command(settings: dict) -> str:
    """`python -m specviz train-tiny card` with the options that differ from the defaults (the shipped card's)."""
    defaults = CardSettings().as_dict()
    flags = [
        f"{CARD_FLAGS[k]} {','.join(f'{x:g}' if isinstance(x, float) else str(x) for x in v) if isinstance(v, list) else v}"
        for k, v in settings.items()
        if k in CARD_FLAGS and v != defaults[k]
    ]
    return " ".join(["python -m specviz train-tiny card", *flags])
