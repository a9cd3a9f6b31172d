"""Stage `export`: write the pair as plain Hugging Face model directories (bf16 safetensors + tokenizer files),
reload them with `AutoModelForCausalLM` / `AutoTokenizer` only (no specviz code), measure the held-out acceptance
statistics on the reloaded weights, write manifest.json, and end with the model card (card.py: it measures the
pair with specviz and writes measurements.json and README.md)."""

from __future__ import annotations

import json
import platform
import shutil
import time
from pathlib import Path

from .card import make_card
from .loop import eval_windows, evaluate
from .measurements import CardSettings
from .models import n_params
from .paths import MAX_TOTAL_MB
from .runs import archs, draft_runs, latest_draft_weights, load_draft, load_target, target_runs
from .tok import load_tokens

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
    model.generation_config = GenerationConfig(
        bos_token_id=cfg.bos_token_id, eos_token_id=cfg.eos_token_id, pad_token_id=cfg.pad_token_id
    )
    model.save_pretrained(out, safe_serialization=True)
    AutoTokenizer.from_pretrained(str(tok_dir)).save_pretrained(out)
    log(f"export: wrote {out} ({_dir_bytes(out) / 1e6:.2f} MB)")


def reload(path: Path):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(str(path), dtype=torch.float32).eval()
    return model, AutoTokenizer.from_pretrained(str(path))


DRAFT_VOCAB = 1024  # the draft vocabulary the bundled draft recommends (docs/speed.md: alpha and speed against others)


def write_token_counts(corpus_dir: Path, draft_dir: Path, log, recommended: int = DRAFT_VOCAB) -> None:
    """Count every token of the training split with the draft's own tokenizer -> draft_dir/token_counts.json, the
    frequency order a trimmed draft vocabulary keeps (engine/loading/vocab.py)."""
    from transformers import AutoTokenizer

    from specviz.engine.loading.vocab import COUNTS_FILE, TokenCounts, count_tokens

    from .corpus import read_jsonl

    tok = AutoTokenizer.from_pretrained(str(draft_dir))
    docs = read_jsonl(corpus_dir / "train.jsonl")
    counts = count_tokens(tok, (d["text"] for d in docs), len(tok))
    source = f"the recipe's training split ({len(docs)} documents: Python stdlib code and its documentation)"
    recommended = recommended if 2 * recommended <= len(tok) else 0  # a small test vocabulary: nothing to trim
    (draft_dir / COUNTS_FILE).write_text(TokenCounts(counts, source, recommended).to_json())
    log(f"export: {draft_dir / COUNTS_FILE}: {int(counts.sum())} tokens counted, recommended vocabulary {recommended}")


def export(args, work: Path, device, log) -> None:
    import torch

    out = args.out_dir
    out.mkdir(parents=True, exist_ok=True)
    tok_dir = work / "tokenizer"
    target = load_target(args, work, "cpu")
    draft = load_draft(args, work, "cpu", target, latest_draft_weights(work))
    counts = {"target": n_params(target), "draft": n_params(draft)}
    save_hf(target, tok_dir, out / "target", log)
    save_hf(draft, tok_dir, out / "draft", log)
    write_token_counts(work / "corpus", out / "draft", log)

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

    corpus = json.loads((work / "corpus" / "manifest.json").read_text())
    corpus.pop("val_ids", None)
    tokens = json.loads((work / "data" / "info.json").read_text())
    runs = [r.name for r in target_runs(work) + draft_runs(work)] + ["draft_ce"]
    results = {
        n: json.loads((work / n / "result.json").read_text()) for n in runs if (work / n / "result.json").exists()
    }
    for r in results.values():
        r.pop("history", None)
    draft_eval = json.loads((work / "draft_eval.json").read_text()) if (work / "draft_eval.json").exists() else {}
    target_arch, draft_arch = archs(args)
    sizes = {"target_bytes": _dir_bytes(out / "target"), "draft_bytes": _dir_bytes(out / "draft")}
    manifest = {
        "created": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "recipe": "python -m specviz train-tiny (specviz/train)",
        "hardware": {
            "machine": platform.machine(),
            "processor": platform.processor() or None,
            "torch_threads": torch.get_num_threads(),
            "device": str(device),
            "torch": torch.__version__,
            "python": platform.python_version(),
        },
        "dtype_on_disk": SHIP_DTYPE,
        "corpus": corpus,
        "tokens": tokens,
        "models": {
            "target": {**target_arch.as_dict(), "parameters": counts["target"]},
            "draft": {
                **draft_arch.as_dict(),
                "parameters": counts["draft"],
                "init": "target embeddings + layer 0 + final norm",
                "training_data": f"{args.draft_data} documents of the training split"
                + (", then continuations the target wrote" if before_tuning else ""),
            },
        },
        "training": results,
        "draft_comparison": draft_eval,
        "held_out": {"shipped": shipped, "ce_only_control": ce_only, "before_tuning": before_tuning},
        "sizes": sizes,
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2))
    total = _dir_bytes(out) / 1e6
    log(f"export: {out} holds {total:.2f} MB")
    if total > MAX_TOTAL_MB:
        raise SystemExit(f"export too large: {total:.1f} MB > {MAX_TOTAL_MB} MB")
    make_card(out, CardSettings.from_args(args), log)
