"""Stage `data` of `train --pair`: chat data the target writes itself (Magpie), appended to the answer store.

The target is given only its chat template's user prefix (`<|im_start|>user\\n` after the system line) and samples a
user message until its end-of-turn token: a prompt of the kind it was tuned to answer (Xu et al. 2024, "Magpie").
It then answers it greedily (what greedy speculative decoding verifies against). train/answer_loop.py decodes many
samples together with one batch kept full; the finished samples go to the answer store (train/answer_store.py: token
ids, prompts and the run's seed, in the repository for a catalogue pair), one shard per `shard_samples`, so a
stopped run keeps every shard it finished and the next run appends after them with the next seed.

Shards of the earlier format (`<work>/data/shard-NNNNN.npz`: the teacher's top-k probabilities per answer position,
made on a GPU) are still read by the training stages (train/draft_pair.py's read_shards).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

SENTINEL = "\x00SPECVIZ\x00"  # a user message no chat template contains, to cut the template where the message starts


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


def shard_paths(data_dir: Path) -> list[Path]:
    return sorted(data_dir.glob("shard-*.npz"))


def load_shard(path: Path) -> dict:
    with np.load(path) as z:
        return {k: z[k] for k in z.files}


def eta_text(done: float, goal: float, seconds: float) -> str:
    """'12.3 tok/s, 1 h 05 min left' style progress for a run that did `done` of `goal` in `seconds`."""
    if done <= 0 or seconds <= 0:
        return "rate unknown yet"
    rate = done / seconds
    left = max(0.0, goal - done) / rate
    hours, minutes = divmod(int(left // 60), 60)
    return f"{rate:.1f}/s, {f'{hours} h {minutes:02d} min' if hours else f'{left / 60:.1f} min'} left"
