"""What every stage of `train --pair` shares about the target: loading it, and its greedy answers to the held-out
prompts (computed once, in float32, into the work dir)."""

from __future__ import annotations

import json
from pathlib import Path

from .chat_data import chat_ids, end_of_turn

HELDOUT_TOKENS = 64  # greedy answer tokens per held-out prompt


def load_target(args, dtype_name: str = "float32", attention: str | None = None):
    """(target, tokenizer) of the pair, frozen, in eval mode (attention: a registered implementation's name)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    extra = {"attn_implementation": attention} if attention else {}
    target = AutoModelForCausalLM.from_pretrained(args.target, dtype=getattr(torch, dtype_name), **extra)
    target = target.eval().to(args.device)
    for p in target.parameters():
        p.requires_grad_(False)
    return target, AutoTokenizer.from_pretrained(args.target)


def heldout_prompts(path: Path) -> list[dict]:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    if not rows or any("prompt" not in r for r in rows):
        raise SystemExit(f"{path}: expected JSON lines with a 'prompt' field each.")
    return rows


def heldout_refs(args, work: Path, target, tokenizer, log) -> list[tuple[list[int], list[int]]]:
    """(templated prompt ids, the target's greedy answer ids) per held-out prompt, computed once in float32."""
    import torch

    path = work / "heldout.json"
    if path.exists():
        return [(r["prompt_ids"], r["answer_ids"]) for r in json.loads(path.read_text())]
    eot = end_of_turn(tokenizer)
    rows = []
    with torch.no_grad():
        for item in heldout_prompts(args.heldout):
            ids = chat_ids(tokenizer, item["prompt"])
            out = target.generate(
                torch.tensor([ids], device=target.device),
                max_new_tokens=HELDOUT_TOKENS,
                do_sample=False,
                eos_token_id=eot,
                pad_token_id=eot,
            )
            rows.append({"kind": item.get("kind", ""), "prompt_ids": ids, "answer_ids": out[0, len(ids) :].tolist()})
    path.write_text(json.dumps(rows))
    log(f"held out: the target's greedy answers to {len(rows)} prompts of {args.heldout}")
    return [(r["prompt_ids"], r["answer_ids"]) for r in rows]
