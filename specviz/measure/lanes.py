"""Run one method on one prompt and return its RunRecord: the one place where race, bench and workload generate.

specviz's own methods run the traced loop (their records carry every count); Hugging Face lanes run `generate()`
with a streamer that notes when each target pass delivered its tokens, so their tau is measured (tokens per pass)
while alpha, which generate() does not report, stays None.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace

import torch
from transformers.generation.streamers import BaseStreamer

from specviz import methods
from specviz.core.record import HF, RunRecord
from specviz.core.settings import RunSettings, TreeSpec, for_method, tree_fields
from specviz.core.suffix_tree import SuffixMemory
from specviz.engine.compare import assisted_refusal, hf_generate
from specviz.engine.decode import build_trace, decode_rounds, encode_prompt
from specviz.engine.loading.models import ModelPair

OnTokens = Callable[[str, list[int], float], None]  # method, all output ids so far, seconds since the start


class DecodingClock:
    """Seconds of decoding since start, leaving out the time spent in the caller's callback (drawing the tokens):
    a lane that reports often must not pay for its display, or the race would time the drawing, not the decoding."""

    def __init__(self) -> None:
        self.start = time.perf_counter()
        self.outside = 0.0  # seconds spent in callbacks

    def now(self) -> float:
        return time.perf_counter() - self.start - self.outside

    def call(self, callback: Callable[..., None], *args) -> None:
        entered = time.perf_counter()
        try:
            callback(*args)
        finally:
            self.outside += time.perf_counter() - entered


def tree_settings(base: RunSettings, shape: TreeSpec, method: str = methods.TREE) -> RunSettings:
    """The settings of a tree lane of this shape (a static shape or a dynamic tree): the draft tree method (or a
    feature head that drafts trees, methods.BRANCHING), K = the tree's depth."""
    return replace(base, method=method, **tree_fields(shape))


def refusal(lane: str, settings: RunSettings) -> str:
    """Why this lane cannot run these settings here ('' when it can), for pages and the bench to leave it out with a
    reason instead of failing the whole comparison."""
    method = methods.get(lane)
    if method.engine == methods.HF and method.hf_option == methods.HF_ASSISTANT_MODEL:
        return assisted_refusal(settings)
    return ""


def run_method(
    pair: ModelPair,
    prompt: str,
    settings: RunSettings,
    method: str,
    on_tokens: OnTokens | None = None,
    tag: str = "untagged",
    memory: SuffixMemory | None = None,
) -> RunRecord:
    """Generate with `method` (any registry name), reporting tokens as each target pass commits them. The record's
    times leave out the time on_tokens takes. memory: what suffix decoding remembers of earlier runs (None: fresh)."""
    report = on_tokens or (lambda *_: None)
    if methods.get(method).engine == methods.HF:
        return _hf_record(pair, prompt, settings, method, lambda ids, t: report(method, ids, t), tag)
    settings = for_method(settings, method)  # a lookup lane runs a sidebar's adaptive K schedule as constant
    prompt_ids = encode_prompt(pair, prompt)
    rounds, ids, ends = [], [], []
    clock = DecodingClock()
    for r in decode_rounds(pair, prompt_ids, settings, memory=memory):
        ends.append(clock.now())
        rounds.append(r)
        ids += r.committed
        clock.call(report, method, list(ids), ends[-1])
    trace = build_trace(pair, prompt, prompt_ids, settings, tuple(rounds), clock.now())
    return RunRecord.of_trace(trace, tag, tuple(ends))


def _hf_record(
    pair: ModelPair,
    prompt: str,
    settings: RunSettings,
    method: str,
    report: Callable[[list[int], float], None],
    tag: str,
) -> RunRecord:
    streamer = _TimingStreamer(report)
    streamer.clock = DecodingClock()
    run = hf_generate(pair, encode_prompt(pair, prompt), settings, method, streamer=streamer)
    wall_s = streamer.clock.now()  # decoding time without the callbacks
    return RunRecord(
        source=HF,
        method=method,
        k=settings.k,
        prompt=prompt,
        text=pair.tokenizer.decode(run.output_ids, skip_special_tokens=True),
        output_ids=run.output_ids,
        per_round_committed=tuple(n for _, n in streamer.arrivals),
        per_round_drafted=None,  # generate() does not report its drafts or acceptances
        per_round_accepted=None,
        per_round_judged=None,
        round_end_s=tuple(t for t, _ in streamer.arrivals),
        wall_s=wall_s,
        settings=replace(settings, method=methods.get(method).mirrors or methods.PLAIN).to_dict(),
        tag=tag,
        meta=pair.describe(),
    )


class _TimingStreamer(BaseStreamer):
    """Receives generate()'s tokens as each target pass commits them (the first put is the prompt, skipped)."""

    def __init__(self, callback: Callable[[list[int], float], None]):
        self.callback = callback
        self.clock = DecodingClock()
        self.ids: list[int] = []
        self.arrivals: list[tuple[float, int]] = []
        self.seen_prompt = False

    def put(self, value: torch.Tensor) -> None:
        if not self.seen_prompt:
            self.seen_prompt = True
            return
        new = value.reshape(-1).tolist()
        self.ids += new
        self.arrivals.append((self.clock.now(), len(new)))
        self.clock.call(self.callback, list(self.ids), self.arrivals[-1][0])

    def end(self) -> None:
        pass
