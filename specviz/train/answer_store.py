"""The data the real pair's drafters train on, kept in the repository: the target's own answers as token ids.

A store is a folder (`assets/models/<pair>/data/` for a catalogue pair) holding `manifest.json` and shards
`answers-NNNNN.npz`. Each shard is a compressed numpy archive of one run's finished samples, in order:

  tokens      uint16 (or int32 past 65,536 ids)  the samples back to back: templated prompt, answer, end-of-turn
  starts      int64 (n + 1,)                     offsets of each sample in tokens
  answer_at   int32 (n,)                         where each sample's answer starts, relative to its start
  prompts     uint8                              the prompts' text, a UTF-8 JSON list (what the target was asked)
  seed        int64 (2,)                         the run's seed and this shard's place in the run

Token ids, not probabilities: 2 bytes a token before compression (about 1.5 after), so a million answer tokens and
their prompts take a few MB and fit the repository; a stage that wants the teacher's soft labels recomputes them
with one batched prefill. The manifest names the format and its version, the target, and per shard its file, seed,
counts and sha256, so a reader refuses a store it does not understand and a later run appends shards after the last
one (a shard is written to a temporary name, then renamed, then listed: a stopped run leaves no half shard).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from specviz.errors import SpecvizError

FORMAT = "specviz-answers"
VERSION = 1
MANIFEST = "manifest.json"


@dataclass(frozen=True)
class Sample:
    """One finished sample: the templated prompt's ids, the answer's ids (through end-of-turn), the prompt's text."""

    prompt_ids: tuple[int, ...]
    answer_ids: tuple[int, ...]
    prompt: str


@dataclass(frozen=True)
class StoreInfo:
    """What the manifest says the store holds."""

    target: str
    vocab: int
    shards: tuple[dict, ...]

    @property
    def samples(self) -> int:
        return sum(s["samples"] for s in self.shards)

    @property
    def answer_tokens(self) -> int:
        return sum(s["answer_tokens"] for s in self.shards)


def new_manifest(target: str, vocab: int) -> dict:
    return {"format": FORMAT, "version": VERSION, "target": target, "vocab": vocab, "shards": []}


def read_manifest(store: Path) -> dict:
    """The store's manifest, checked (a clear error for a missing, foreign or newer store)."""
    path = Path(store) / MANIFEST
    if not path.is_file():
        raise SpecvizError(f"{store} holds no answer store ({MANIFEST} missing): run the data stage first.")
    try:
        body = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise SpecvizError(f"{path} is not JSON ({exc}).") from exc
    if not isinstance(body, dict) or body.get("format") != FORMAT:
        raise SpecvizError(f"{path} is not a specviz answer store (format {body.get('format')!r}).")
    if body.get("version") != VERSION:
        raise SpecvizError(f"{path} is version {body.get('version')}; this code reads version {VERSION}.")
    return body


def store_info(store: Path) -> StoreInfo:
    body = read_manifest(store)
    return StoreInfo(str(body["target"]), int(body["vocab"]), tuple(body["shards"]))


def open_store(store: Path, target: str, vocab: int) -> dict:
    """The manifest of an existing store for this target, or a new one (a store made for another target is refused)."""
    if not (Path(store) / MANIFEST).exists():
        return new_manifest(target, vocab)
    body = read_manifest(store)
    if body["vocab"] != vocab:
        raise SpecvizError(f"{store} was made for a {body['vocab']}-id vocabulary ({body['target']}), not {vocab}.")
    return body


def pack(samples: list[Sample], vocab: int, seed: int, part: int) -> dict:
    """A shard's arrays from its samples (see the module's doc)."""
    if not samples:
        raise SpecvizError("a shard needs at least one sample")
    id_type = np.uint16 if vocab <= 65536 else np.int32
    rows = [np.asarray(s.prompt_ids + s.answer_ids, dtype=np.int64) for s in samples]
    tokens = np.concatenate(rows)
    if tokens.min() < 0 or tokens.max() >= vocab:
        raise SpecvizError(f"token ids outside the vocabulary (0 to {vocab - 1})")
    return {
        "tokens": tokens.astype(id_type),
        "starts": np.concatenate([[0], np.cumsum([len(r) for r in rows])]).astype(np.int64),
        "answer_at": np.asarray([len(s.prompt_ids) for s in samples], dtype=np.int32),
        "prompts": np.frombuffer(json.dumps([s.prompt for s in samples]).encode("utf-8"), dtype=np.uint8),
        "seed": np.asarray([seed, part], dtype=np.int64),
    }


def unpack(arrays: dict) -> list[Sample]:
    """The samples of a shard's arrays, in order (the inverse of pack)."""
    prompts = json.loads(arrays["prompts"].tobytes().decode("utf-8"))
    starts, at = arrays["starts"], arrays["answer_at"]
    out = []
    for i, prompt in enumerate(prompts):
        ids = arrays["tokens"][starts[i] : starts[i + 1]].astype(np.int64).tolist()
        out.append(Sample(tuple(ids[: at[i]]), tuple(ids[at[i] :]), prompt))
    return out


def sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def append_shard(store: Path, samples: list[Sample], target: str, vocab: int, seed: int, part: int, **notes) -> dict:
    """Write the samples as the store's next shard and list it in the manifest; returns the shard's entry."""
    store = Path(store)
    store.mkdir(parents=True, exist_ok=True)
    body = open_store(store, target, vocab)
    index = 1 + max((int(s["file"][8:13]) for s in body["shards"]), default=-1)
    name = f"answers-{index:05d}.npz"
    tmp = store / f".{name}.tmp.npz"
    np.savez_compressed(tmp, **pack(samples, vocab, seed, part))
    os.replace(tmp, store / name)
    entry = {
        "file": name,
        "seed": seed,
        "part": part,
        "samples": len(samples),
        "answer_tokens": sum(len(s.answer_ids) for s in samples),
        "prompt_tokens": sum(len(s.prompt_ids) for s in samples),
        "bytes": (store / name).stat().st_size,
        "sha256": sha256(store / name),
        "written": time.strftime("%Y-%m-%d %H:%M:%S"),
        **notes,
    }
    body["shards"].append(entry)
    tmp_manifest = store / f".{MANIFEST}.tmp"
    tmp_manifest.write_text(json.dumps(body, indent=1) + "\n", encoding="utf-8")
    os.replace(tmp_manifest, store / MANIFEST)
    return entry


def read_samples(store: Path, verify: bool = False) -> list[Sample]:
    """Every sample of the store's listed shards, in order (verify: check each shard's sha256 first)."""
    samples = []
    for entry in read_manifest(store)["shards"]:
        path = Path(store) / entry["file"]
        if not path.is_file():
            raise SpecvizError(f"{path} is listed in the manifest but missing.")
        if verify and sha256(path) != entry["sha256"]:
            raise SpecvizError(f"{path} does not match its sha256 in the manifest.")
        with np.load(path) as z:
            samples += unpack({k: z[k] for k in z.files})
    return samples


def next_run_seed(store: Path, base: int) -> int:
    """A run's seed: the base seed, or one past the last run's when the store has shards (a run's shards share one
    seed, so no two runs draw the same prompts)."""
    if not (Path(store) / MANIFEST).exists():
        return base
    seeds = [s["seed"] for s in read_manifest(store)["shards"]]
    return max([base] + [seed + 1 for seed in seeds])
