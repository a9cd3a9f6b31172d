"""Stage `data` of `train --pair`: chat data the target writes itself (Magpie), kept as compact top-k shards.

The target is given only its chat template's user prefix (`<|im_start|>user\\n` after the system line) and samples a
user message until its end-of-turn token: a prompt of the kind it was tuned to answer (Xu et al. 2024, "Magpie").
Each prompt is then wrapped in the template and answered by the target, greedily for most rows (what greedy
speculative decoding verifies against) and sampled at T = 1 for every `sample_every`-th batch. Many prompts are decoded
together, left-padded, with the KV cache (transformers' generate), in bfloat16 by default.

Only the teacher's top-k probabilities at T = 1 are kept per answer position (k = 16 by default): a draft distilled
on them sees almost all of the target's mass (its top 16 hold most of it) for 64 bytes a position instead of 196 kB.
One batch of prompts is one shard, `<work>/data/shard-NNNNN.npz`, written atomically: a stopped run resumes at the next
shard with the seed that shard would have had, so the data do not depend on where a run stopped.

Shard arrays: tokens (int32, the samples' token ids back to back: templated prompt, answer, end-of-turn), starts
(int64, n + 1 offsets into tokens), answer_at (int64, where each sample's answer starts, relative to its start),
topk_ids (uint16 or int32, one row per answer token in order), topk_probs (float16, same shape).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

SENTINEL = "\x00SPECVIZ\x00"  # a user message no chat template contains, to cut the template where the message starts


@dataclass(frozen=True)
class DataConfig:
    """What the data stage generates and how."""

    tokens: int  # answer tokens to reach (the stage stops at the first shard past it)
    batch: int  # prompts decoded together (one shard)
    top_k: int  # teacher probabilities kept per position
    prompt_tokens: int  # longest user message the target may write
    answer_tokens: int  # longest answer
    sample_every: int  # every n-th shard answers at T = 1 (0: all greedy)
    seed: int
    minutes: float  # wall-clock budget of this run (the stage stops after the shard that passes it)


def user_prefix(tokenizer) -> str:
    """The chat template's text up to where a user message starts (system line included): Magpie's prompt."""
    text = tokenizer.apply_chat_template([{"role": "user", "content": SENTINEL}], tokenize=False)
    if SENTINEL not in text:
        raise SystemExit("data: the tokenizer's chat template drops the user message; it cannot write prompts.")
    return text[: text.index(SENTINEL)]


def end_of_turn(tokenizer) -> int:
    """The id of the token that closes a turn in the template (`<|im_end|>`), else the EOS."""
    text = tokenizer.apply_chat_template([{"role": "user", "content": SENTINEL}], tokenize=False)
    tail = tokenizer.encode(text[text.index(SENTINEL) + len(SENTINEL) :], add_special_tokens=False)
    return int(tail[0]) if tail else int(tokenizer.eos_token_id)


def chat_ids(tokenizer, prompt: str) -> list[int]:
    """The prompt wrapped in the chat template, ready for the assistant's answer."""
    ids = tokenizer.apply_chat_template([{"role": "user", "content": prompt}], add_generation_prompt=True)
    return list(ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "keys") else ids)


def write_prompts(target, tokenizer, n: int, max_tokens: int, eot: int, seed: int) -> list[str]:
    """n user messages the target samples at T = 1 after its user prefix (all rows share it: no padding)."""
    import torch

    prefix = tokenizer.encode(user_prefix(tokenizer), add_special_tokens=False)
    x = torch.tensor([prefix] * n, dtype=torch.long, device=target.device)  # (n, P)
    torch.manual_seed(seed)
    out = target.generate(
        x,
        attention_mask=torch.ones_like(x),
        max_new_tokens=max_tokens,
        do_sample=True,
        temperature=1.0,
        top_k=0,
        top_p=1.0,
        eos_token_id=eot,
        pad_token_id=eot,
    )
    prompts = []
    for row in out[:, len(prefix) :].tolist():
        body = row[: row.index(eot)] if eot in row else row
        prompts.append(tokenizer.decode(body, skip_special_tokens=True).strip())
    return prompts


def answer(target, rows: list[list[int]], max_new: int, eot: int, pad: int, top_k: int, sample: bool, seed: int):
    """Left-padded batched answers with the KV cache: per row (answer ids through the first end-of-turn, (L, k) ids,
    (L, k) probabilities at T = 1 from the raw logits at each answer position)."""
    import torch

    width = max(len(r) for r in rows)
    x = torch.full((len(rows), width), pad, dtype=torch.long)
    mask = torch.zeros_like(x)
    for i, r in enumerate(rows):  # left padding: every row's answer starts at column `width`
        x[i, width - len(r) :] = torch.tensor(r)
        mask[i, width - len(r) :] = 1
    torch.manual_seed(seed)
    sampling = {"temperature": 1.0, "top_k": 0, "top_p": 1.0} if sample else {}
    out = target.generate(
        x.to(target.device),
        attention_mask=mask.to(target.device),
        max_new_tokens=max_new,
        do_sample=sample,
        eos_token_id=eot,
        pad_token_id=pad,
        output_logits=True,
        return_dict_in_generate=True,
        **sampling,
    )
    steps = [step.float().softmax(-1).topk(top_k, dim=-1) for step in out.logits]  # raw logits, step by step
    top_ids = torch.stack([s.indices for s in steps], dim=1)  # (B, L, k)
    top_probs = torch.stack([s.values for s in steps], dim=1)  # (B, L, k)
    new = out.sequences[:, width:].cpu()  # (B, L)
    results = []
    for i in range(len(rows)):
        ids = new[i].tolist()
        n = ids.index(eot) + 1 if eot in ids else len(ids)
        results.append((ids[:n], top_ids[i, :n].cpu().numpy(), top_probs[i, :n].cpu().numpy()))
    return results


def shard_paths(data_dir: Path) -> list[Path]:
    return sorted(data_dir.glob("shard-*.npz"))


def load_shard(path: Path) -> dict:
    with np.load(path) as z:
        return {k: z[k] for k in z.files}


def answer_tokens(data_dir: Path) -> int:
    """Answer tokens in the finished shards (each shard's count is its topk_ids rows)."""
    total = 0
    for path in shard_paths(data_dir):
        with np.load(path) as z:
            total += len(z["topk_probs"])
    return total


def pack_shard(samples: list[tuple[list[int], list[int], np.ndarray, np.ndarray]], vocab: int) -> dict:
    """The shard's arrays from (templated prompt ids, answer ids, top-k ids, top-k probs) per sample."""
    tokens = [np.asarray(p + a, dtype=np.int32) for p, a, _, _ in samples]
    starts = np.concatenate([[0], np.cumsum([len(t) for t in tokens])]).astype(np.int64)
    id_type = np.uint16 if vocab <= 65536 else np.int32
    return {
        "tokens": np.concatenate(tokens),
        "starts": starts,
        "answer_at": np.asarray([len(p) for p, _, _, _ in samples], dtype=np.int64),
        "topk_ids": np.concatenate([i for _, _, i, _ in samples]).astype(id_type),
        "topk_probs": np.concatenate([q for _, _, _, q in samples]).astype(np.float16),
    }


def save_shard(path: Path, arrays: dict) -> None:
    tmp = path.with_name(path.stem + ".tmp.npz")
    np.savez(tmp, **arrays)
    tmp.replace(path)


def eta_text(done: float, goal: float, seconds: float) -> str:
    """'12.3 tok/s, 1 h 05 min left' style progress for a run that did `done` of `goal` in `seconds`."""
    if done <= 0 or seconds <= 0:
        return "rate unknown yet"
    rate = done / seconds
    left = max(0.0, goal - done) / rate
    hours, minutes = divmod(int(left // 60), 60)
    return f"{rate:.1f}/s, {f'{hours} h {minutes:02d} min' if hours else f'{left / 60:.1f} min'} left"


def generate_data(target, tokenizer, data_dir: Path, cfg: DataConfig, heldout: set[str], log: Callable) -> dict:
    """Write shards until cfg.tokens answer tokens exist or cfg.minutes pass; returns the data's summary."""
    data_dir.mkdir(parents=True, exist_ok=True)
    eot = end_of_turn(tokenizer)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else eot
    vocab = int(target.config.vocab_size)
    have, t0, made, dropped = answer_tokens(data_dir), time.time(), 0, 0
    log(f"data: {len(shard_paths(data_dir))} shards, {have:,} answer tokens of {cfg.tokens:,} already written")
    while have < cfg.tokens and time.time() - t0 < cfg.minutes * 60:
        index = len(shard_paths(data_dir))
        seed = cfg.seed + 1000 * index
        t_shard = time.time()
        prompts = write_prompts(target, tokenizer, cfg.batch, cfg.prompt_tokens, eot, seed)
        log(
            f"data: shard {index}: {len(prompts)} prompts written in {time.time() - t_shard:.0f} s, e.g. {prompts[0]!r}"
        )
        kept = [p for p in prompts if p and p not in heldout]  # an empty or held-out prompt is not trained on
        dropped += len(prompts) - len(kept)
        rows = [chat_ids(tokenizer, p) for p in kept]
        sample = cfg.sample_every > 0 and index % cfg.sample_every == cfg.sample_every - 1
        answers = answer(target, rows, cfg.answer_tokens, eot, pad, cfg.top_k, sample, seed + 1)
        samples = [(r, a, i, q) for r, (a, i, q) in zip(rows, answers)]
        arrays = pack_shard(samples, vocab)
        save_shard(data_dir / f"shard-{index:05d}.npz", arrays)
        made += len(arrays["topk_probs"])
        have += len(arrays["topk_probs"])
        log(
            f"data: shard {index} ({'sampled' if sample else 'greedy'}, {len(kept)} prompts), {have:,} / "
            f"{cfg.tokens:,} answer tokens, {eta_text(made, cfg.tokens - have + made, time.time() - t0)}"
        )
    summary = {
        "shards": len(shard_paths(data_dir)),
        "answer_tokens": have,
        "goal_tokens": cfg.tokens,
        "top_k": cfg.top_k,
        "this_run": {"answer_tokens": made, "seconds": round(time.time() - t0, 1), "prompts_dropped": dropped},
    }
    (data_dir / "summary.json").write_text(json.dumps(summary, indent=2))
    return summary


def teacher_mass(data_dir: Path) -> float:
    """Mean probability the kept top-k hold over the answer positions (1.0 would be the whole distribution)."""
    sums, n = 0.0, 0
    for path in shard_paths(data_dir):
        with np.load(path) as z:
            probs = z["topk_probs"].astype(np.float64)
            sums += probs.sum()
            n += len(probs)
    return sums / max(1, n)
