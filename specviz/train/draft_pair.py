"""Stage `draft` of `train --pair`: a small LlamaForCausalLM on the target's tokenizer, distilled on the top-k shards.

The draft has the target's width, heads and tokenizer, so it starts from the target's own weights: the embedding
matrix (tied, frozen: it is also the LM head), the final norm, and L decoder layers copied from the target (its first
L - 1 layers and its last one: the last layer is the one that writes what the LM head reads). Only the decoder layers
and the final norm are trained.

Its vocabulary is trimmed (FR-Spec, engine/loading/vocab.py): logits over the N token ids the target wrote most often in
the data, N the smallest of a few sizes whose kept ids cover `coverage` of the target's greedy choices (measured on the
shards, written to token_counts.json with `recommended` = N, which the engine reads). The loss is the cross-entropy of
the draft's softmax over those N ids against the teacher's top-k probabilities mapped onto them and renormalised.

Held-out agreement: the target's greedy answers to the held-out prompts (assets/workloads/chat-heldout.jsonl), and the
draft teacher-forced on them; greedy speculative decoding with K drafts accepts, at each round, the drafts up to the
first one that differs from the target's token, which the teacher-forced predictions give exactly. So
alpha = accepted / drafted and tau = mean tokens per round follow without decoding.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .chat_data import eta_text, load_shard, shard_paths

VOCAB_SIZES = (1024, 2048, 4096, 8192, 16384, 32768)


@dataclass(frozen=True)
class Shards:
    """All shards in memory: the samples' tokens, where each answer starts, and its rows of top-k."""

    tokens: list[np.ndarray]  # per sample (S_i,) int64
    answer_at: np.ndarray  # (n,) int64
    topk_at: np.ndarray  # (n,) int64: the row of the sample's first answer token in topk_ids
    topk_ids: np.ndarray  # (R, k) int64
    topk_probs: np.ndarray  # (R, k) float32


def read_shards(data_dir: Path) -> Shards:
    """Every sample of the data: an answer store's (train/answer_store.py: hard labels, the answer token with
    probability 1, k = 1) or the earlier top-k shards' (a few hundred MB for 5 M answer tokens at k = 16)."""
    if (Path(data_dir) / "manifest.json").exists():
        return store_shards(data_dir)
    tokens, answer_at, topk_at, ids, probs, row = [], [], [], [], [], 0
    for path in shard_paths(data_dir):
        z = load_shard(path)
        for i in range(len(z["starts"]) - 1):
            sample = z["tokens"][z["starts"][i] : z["starts"][i + 1]].astype(np.int64)
            tokens.append(sample)
            answer_at.append(int(z["answer_at"][i]))
            topk_at.append(row)
            row += len(sample) - int(z["answer_at"][i])
        ids.append(z["topk_ids"].astype(np.int64))
        probs.append(z["topk_probs"].astype(np.float32))
    if not tokens:
        raise SystemExit(f"draft: no shards in {data_dir}: run the data stage first (`train --pair NAME data`).")
    return Shards(tokens, np.asarray(answer_at), np.asarray(topk_at), np.concatenate(ids), np.concatenate(probs))


def store_shards(store: Path) -> Shards:
    """The answer store's samples as Shards with hard labels: each answer token is the teacher's top-1 (greedy)."""
    from .answer_store import read_samples

    samples = read_samples(store)
    tokens = [np.asarray(s.prompt_ids + s.answer_ids, dtype=np.int64) for s in samples]
    answer_at = np.asarray([len(s.prompt_ids) for s in samples], dtype=np.int64)
    lengths = np.asarray([len(s.answer_ids) for s in samples], dtype=np.int64)
    topk_at = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    answers = np.concatenate([t[a:] for t, a in zip(tokens, answer_at)])[:, None]  # (R, 1)
    return Shards(tokens, answer_at, topk_at, answers, np.ones(answers.shape, dtype=np.float32))


def token_counts(shards: Shards, vocab: int) -> np.ndarray:
    """(vocab,) how often the target wrote each id (answers only: the text a draft proposes)."""
    counts = np.zeros(vocab, dtype=np.int64)
    for sample, at in zip(shards.tokens, shards.answer_at):
        counts += np.bincount(sample[at:], minlength=vocab)[:vocab]
    return counts


def choose_vocab(counts: np.ndarray, top1: np.ndarray, coverage: float) -> tuple[int, dict[int, float]]:
    """(N, {size: share of the target's top-1 choices inside the size most frequent ids}): the smallest size that
    covers `coverage` (or the largest measured)."""
    order = np.argsort(-counts, kind="stable")
    shares = {}
    for size in VOCAB_SIZES:
        if size >= len(counts):
            break
        inside = np.zeros(len(counts), dtype=bool)
        inside[order[:size]] = True
        shares[size] = round(float(inside[top1].mean()), 4)
    chosen = next((s for s, v in shares.items() if v >= coverage), len(counts))
    return chosen, shares


def trimmed_ids(counts: np.ndarray, n: int, always: tuple[int, ...] = ()) -> np.ndarray:
    """(n,) the n most frequent ids (ties by id) plus `always` (the end-of-turn token), ascending."""
    order = list(np.argsort(-counts, kind="stable")[:n])
    for token in always:
        if token not in order:
            order[-1 - always.index(token)] = token
    return np.sort(np.asarray(order, dtype=np.int64))


def source_layers(target_layers: int, layers: int, init: str = "first-last") -> list[int]:
    """Which target layer each draft layer starts from: the first layers - 1, then the last ("first-last"), or the
    first layers ("first"). Measured on smollm2's held-out answers before training, 2 layers: first-last agrees on
    0.0 % of tokens (the last layer reads states it never saw), first on 4.0 %."""
    if init == "first":
        return list(range(layers))
    return list(range(layers - 1)) + [target_layers - 1]


def new_draft(target, layers: int, init: str = "first-last"):
    """A LlamaForCausalLM of the target's width and tokenizer, started from its weights (see the module's doc)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = target.config.to_dict()
    cfg.update(num_hidden_layers=layers, tie_word_embeddings=True, architectures=["LlamaForCausalLM"])
    cfg.pop("_name_or_path", None)
    config = LlamaConfig(**{k: v for k, v in cfg.items() if k not in ("model_type", "transformers_version")})
    draft = LlamaForCausalLM(config).to(torch.float32)
    sd = {k: v.float() for k, v in target.state_dict().items()}
    mine = draft.state_dict()
    with torch.no_grad():
        mine["model.embed_tokens.weight"].copy_(sd["model.embed_tokens.weight"])
        mine["model.norm.weight"].copy_(sd["model.norm.weight"])
        for i, src in enumerate(source_layers(target.config.num_hidden_layers, layers, init)):
            for key, value in mine.items():
                if key.startswith(f"model.layers.{i}."):
                    value.copy_(sd[key.replace(f"model.layers.{i}.", f"model.layers.{src}.", 1)])
    draft.tie_weights()
    draft.model.embed_tokens.weight.requires_grad_(False)
    return draft


def trimmed_logits(draft, x, mask, vocab_ids):
    """(B, T, N) the draft's logits over the kept ids only: the trimmed LM head."""
    hidden = draft.model(input_ids=x, attention_mask=mask).last_hidden_state  # (B, T, H)
    return hidden @ draft.model.embed_tokens.weight[vocab_ids].T


def batch_of(shards: Shards, picks: np.ndarray, context: int, index_of: np.ndarray):
    """(x (B, T), mask (B, T), rows (P,) batch row, cols (P,) column predicting, teacher ids (P, k) as kept indices or
    -1, teacher probs (P, k)) for the answer positions of the picked samples inside `context` tokens."""
    import torch

    seqs = [shards.tokens[i][:context] for i in picks]
    width = max(len(s) for s in seqs)
    x = np.zeros((len(seqs), width), dtype=np.int64)
    mask = np.zeros_like(x)
    rows, cols, trows = [], [], []
    for b, (i, s) in enumerate(zip(picks, seqs)):
        x[b, : len(s)], mask[b, : len(s)] = s, 1
        at = int(shards.answer_at[i])
        positions = np.arange(max(at, 1), len(s))  # the answer tokens inside the window
        rows.append(np.full(len(positions), b))
        cols.append(positions - 1)  # the column whose output predicts that token
        trows.append(shards.topk_at[i] + positions - at)
    rows, cols, trows = (np.concatenate(a) for a in (rows, cols, trows))
    ids = index_of[shards.topk_ids[trows]]  # (P, k) kept index, -1 outside
    probs = np.where(ids >= 0, shards.topk_probs[trows], 0.0)
    t = lambda a: torch.from_numpy(np.ascontiguousarray(a))  # noqa: E731
    return t(x), t(mask), t(rows), t(cols), t(ids.clip(min=0)), t(probs)


def distill_loss(logits, rows, cols, ids, probs):
    """(loss, greedy agreement with the teacher's top-1): CE of the draft's kept softmax against the teacher's top-k
    renormalised on the kept ids."""
    logq = logits[rows, cols].log_softmax(-1)  # (P, N)
    p = probs / probs.sum(-1, keepdim=True).clamp_min(1e-9)  # (P, k)
    loss = -(p * logq.gather(-1, ids)).sum(-1).mean()
    agree = (logq.argmax(-1) == ids[:, 0]).float().mean()
    return loss, agree


def rounds(matches: np.ndarray, k: int) -> tuple[int, int, int]:
    """(accepted, drafted, rounds) of greedy speculative decoding with k drafts over a run of per-position matches
    (matches[j]: the draft, given the target's tokens before j, predicts token j)."""
    accepted = drafted = n_rounds = 0
    j = 0
    while j < len(matches):
        m = 0
        while m < k and j + m < len(matches) and matches[j + m]:
            m += 1
        drafted += min(k, len(matches) - j)
        accepted += m
        n_rounds += 1
        j += m + 1  # the accepted drafts, then the target's own token
    return accepted, drafted, n_rounds


def alpha_tau(match_runs: list[np.ndarray], k: int) -> dict:
    """alpha (accepted / drafted), tau (tokens per round) and per-position agreement over the held-out answers."""
    acc = dra = rnd = tokens = 0
    for m in match_runs:
        a, d, r = rounds(m, k)
        acc, dra, rnd, tokens = acc + a, dra + d, rnd + r, tokens + len(m)
    agree = float(np.concatenate(match_runs).mean()) if match_runs else 0.0
    return {
        "greedy_agreement": round(agree, 4),
        f"alpha_k{k}": round(acc / max(1, dra), 4),
        f"tau_k{k}": round(tokens / max(1, rnd), 4),
    }


def draft_matches(draft, vocab_ids, refs: list[tuple[list[int], list[int]]]) -> list[np.ndarray]:
    """Per held-out answer, whether the draft's trimmed argmax equals the target's greedy token at each position."""
    import torch

    runs = []
    with torch.no_grad():
        for prompt, answer in refs:
            x = torch.tensor([prompt + answer], device=vocab_ids.device)
            logits = trimmed_logits(draft, x, torch.ones_like(x), vocab_ids)[0]  # (S, N)
            guess = vocab_ids[logits[len(prompt) - 1 : -1].argmax(-1)]
            runs.append((guess == x[0, len(prompt) :]).cpu().numpy())
    return runs


@dataclass(frozen=True)
class LoopConfig:
    """One budgeted, resumable training run."""

    name: str
    minutes: float
    steps: int | None  # total steps of the schedule (None: fitted to the first run's budget)
    lr: float
    batch: int
    context: int
    seed: int
    ckpt_minutes: float
    eval_minutes: float


def lr_at(step: int, peak: float, total: int, warmup: int = 30) -> float:
    """Linear warm-up, then cosine to peak / 10."""
    if step < warmup:
        return peak * (step + 1) / warmup
    t = min(1.0, (step - warmup) / max(1, total - warmup))
    return peak / 10 + (peak - peak / 10) * 0.5 * (1 + np.cos(np.pi * t))


def train_loop(module, step_fn: Callable, evaluate: Callable[[], dict], cfg: LoopConfig, run: Path, log) -> dict:
    """Train `module` by `step_fn(rng) -> (loss, agreement)` (resume from run/ckpt.pt, skip when run/result.json
    exists); logs progress with the time left, evaluates every cfg.eval_minutes; returns the run's record."""
    import torch

    run.mkdir(parents=True, exist_ok=True)
    ckpt, result_path = run / "ckpt.pt", run / "result.json"
    if result_path.exists():
        module.load_state_dict(torch.load(run / "final.pt", map_location="cpu"), strict=False)
        log(f"{cfg.name}: already trained ({result_path})")
        return json.loads(result_path.read_text())
    params = [p for p in module.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=cfg.lr, betas=(0.9, 0.95), weight_decay=0.0)
    rng = np.random.default_rng(cfg.seed)
    state = {"step": 0, "elapsed": 0.0, "max_steps": cfg.steps, "history": []}
    trainable = lambda: {k: v for k, v in module.state_dict().items() if not k.endswith("embed_tokens.weight")}  # noqa: E731
    if ckpt.exists():
        saved = torch.load(ckpt, weights_only=False, map_location="cpu")
        module.load_state_dict(saved["module"], strict=False)
        opt.load_state_dict(saved["optimizer"])
        rng.bit_generator.state = saved["rng"]
        state = saved["state"]
        log(f"{cfg.name}: resumed at step {state['step']} of {state['max_steps']} ({state['elapsed'] / 60:.1f} min)")

    def save() -> None:
        tmp = ckpt.with_suffix(".tmp")
        torch.save(
            {"module": trainable(), "optimizer": opt.state_dict(), "rng": rng.bit_generator.state, "state": state}, tmp
        )
        os.replace(tmp, ckpt)

    def record() -> None:
        module.eval()
        state["history"].append({"step": state["step"], "minutes": round(state["elapsed"] / 60, 2), **evaluate()})
        module.train()
        log(f"{cfg.name}: held out at step {state['step']}: {json.dumps(state['history'][-1])}")

    if not state["history"]:
        record()
    module.train()
    start, timed, last_log, last_eval, last_ckpt = time.time(), [], time.time(), time.time(), time.time()
    sums = np.zeros(2)
    while (state["max_steps"] is None or state["step"] < state["max_steps"]) and time.time() - start < cfg.minutes * 60:
        t0 = time.time()
        lr = lr_at(state["step"], cfg.lr, state["max_steps"] or 10**9)
        for group in opt.param_groups:
            group["lr"] = lr
        loss, agree = step_fn(rng)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        sums += [float(loss.detach()), float(agree)]  # waits for the device: the step's time is all in dt
        dt = time.time() - t0
        state["step"] += 1
        state["elapsed"] += dt
        timed.append(dt)
        if state["max_steps"] is None and len(timed) == 8:
            per_step = float(np.mean(timed[2:]))
            state["max_steps"] = state["step"] + max(1, int((cfg.minutes * 60 * 0.95 - sum(timed)) / per_step))
            log(f"{cfg.name}: {1 / per_step:.2f} steps/s -> {state['max_steps']} steps in {cfg.minutes:g} min")
        now = time.time()
        if now - last_log >= 60:
            n = max(1, len(timed))
            done = state["step"]
            left = eta_text(done, state["max_steps"] or done, state["elapsed"]).replace("/s", " steps/s")
            log(
                f"{cfg.name}: step {done}/{state['max_steps']} loss {sums[0] / n:.4f} top-1 agreement "
                f"{sums[1] / n:.3f} lr {lr:.1e}, {left}"
            )
            sums[:], timed[:], last_log = 0, timed[-1:], now
        if now - last_eval >= cfg.eval_minutes * 60:
            record()
            last_eval = time.time()
        if now - last_ckpt >= cfg.ckpt_minutes * 60:
            save()
            last_ckpt = time.time()
    finished = state["max_steps"] is not None and state["step"] >= state["max_steps"]
    record()
    save()
    result = {
        "steps": state["step"],
        "max_steps": state["max_steps"],
        "train_minutes": round(state["elapsed"] / 60, 2),
        "finished": finished,
        "batch": cfg.batch,
        "context": cfg.context,
        "lr": cfg.lr,
        "threads": torch.get_num_threads(),
        "history": state["history"],
    }
    if finished:
        torch.save(trainable(), run / "final.pt")
        result_path.write_text(json.dumps(result, indent=2))
        log(f"{cfg.name}: finished, {state['step']} steps in {state['elapsed'] / 60:.1f} min")
    else:
        log(f"{cfg.name}: stopped by the budget at step {state['step']} of {state['max_steps']}; run again to resume")
    return result
