"""The race: one prompt, several lanes (plain, ours, Hugging Face's), each timed token by token as it streams.

Lanes run one after another, never concurrently, so no lane steals the other's cores. Each lane reports when every
token arrived: speculation delivers tokens in bursts, which the inter-token latencies show.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Callable

import torch
from transformers.generation.streamers import BaseStreamer

from specviz.core.settings import RunSettings
from specviz.engine.compare import hf_generate
from specviz.engine.decode import decode_rounds, encode_prompt
from specviz.engine.models import ModelPair

LANE_LABELS = {
    "plain": "plain decoding (specviz)",
    "draft": "specviz · draft model",
    "ngram": "specviz · n-gram lookup",
    "hf_assisted": "HF generate · assistant_model",
    "hf_prompt_lookup": "HF generate · prompt lookup",
}
OnTokens = Callable[[str, list[int], float], None]  # lane, all output ids so far, seconds since the start


@dataclass(frozen=True)
class LaneResult:
    lane: str
    output_ids: tuple[int, ...]
    arrivals: tuple[tuple[float, int], ...]  # (seconds since start, tokens that arrived then)
    alpha: float | None = None
    tau: float | None = None

    @property
    def wall_s(self) -> float:
        return self.arrivals[-1][0] if self.arrivals else 0.0

    @property
    def ttft_s(self) -> float:
        return self.arrivals[0][0] if self.arrivals else 0.0

    @property
    def tokens_per_s(self) -> float:
        return len(self.output_ids) / self.wall_s if self.wall_s else 0.0

    def inter_token_latencies_ms(self) -> list[float]:
        """Gap before each token after the first: a burst of n tokens is one gap then n - 1 zeros."""
        gaps, previous = [], None
        for t, n in self.arrivals:
            if previous is not None:
                gaps.append((t - previous) * 1e3)
            gaps += [0.0] * (n - 1)
            previous = t
        return gaps


def run_lane(pair: ModelPair, prompt: str, settings: RunSettings, lane: str, on_tokens: OnTokens | None = None) -> LaneResult:
    """Generate with one lane, reporting tokens as they are committed."""
    report = on_tokens or (lambda *_: None)
    if lane.startswith("hf_"):
        streamer = _TimingStreamer(lambda ids, t: report(lane, ids, t))
        prompt_ids = encode_prompt(pair, prompt)
        streamer.start = time.perf_counter()
        run = hf_generate(pair, prompt_ids, settings, lane, streamer=streamer)
        return LaneResult(lane, run.output_ids, tuple(streamer.arrivals))
    ids, arrivals, judged, accepted, rounds = [], [], 0, 0, 0
    start = time.perf_counter()
    for r in decode_rounds(pair, encode_prompt(pair, prompt), replace(settings, method=lane)):
        ids += r.committed
        judged, accepted, rounds = judged + r.judged, accepted + r.accepted, rounds + 1
        arrivals.append((time.perf_counter() - start, len(r.committed)))
        report(lane, ids, arrivals[-1][0])
    alpha = accepted / judged if judged else None  # per-token acceptance probability
    return LaneResult(lane, tuple(ids), tuple(arrivals), alpha, len(ids) / rounds if rounds else None)


class _TimingStreamer(BaseStreamer):
    """Receives generate()'s tokens as they are committed (the first put is the prompt, skipped)."""

    def __init__(self, callback: Callable[[list[int], float], None]):
        self.callback = callback
        self.start = time.perf_counter()
        self.ids: list[int] = []
        self.arrivals: list[tuple[float, int]] = []
        self.seen_prompt = False

    def put(self, value: torch.Tensor) -> None:
        if not self.seen_prompt:
            self.seen_prompt = True
            return
        new = value.reshape(-1).tolist()
        self.ids += new
        self.arrivals.append((time.perf_counter() - self.start, len(new)))
        self.callback(self.ids, self.arrivals[-1][0])

    def end(self) -> None:
        pass


def first_divergence(reference: tuple[int, ...], other: tuple[int, ...]) -> int | None:
    """Index of the first differing token (or of the shorter end), None when identical."""
    for i, (a, b) in enumerate(zip(reference, other)):
        if a != b:
            return i
    return None if len(reference) == len(other) else min(len(reference), len(other))
