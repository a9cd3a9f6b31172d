"""Which precision is faster on this machine: time a target step and a speculative round in each, on the pair in use.

A speed claim depends on the CPU (native bfloat16 or emulated), so the app measures it where it runs instead of
quoting docs/speed.md.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from specviz.engine.costs import measure_costs
from specviz.engine.loading.models import ModelPair
from specviz.measure.bench import cpu_model

ROUND_K = 4  # the speculative round timed: K draft steps and one verify pass over K + 1 tokens


@dataclass(frozen=True)
class PrecisionTiming:
    dtype: str
    target_step_ms: float  # one plain decoding step
    round_ms: float | None  # K draft steps + one verify pass (None without a draft model)


def time_precisions(
    load: Callable[[str], ModelPair], dtypes: Sequence[str] = ("float32", "bfloat16")
) -> list[PrecisionTiming]:
    """Median timings (5 interleaved repeats after a warm-up) of the pair loaded in each precision."""
    out = []
    for dtype in dtypes:
        costs = measure_costs(load(dtype), k_max=ROUND_K, repeats=5)
        step = costs.target_step_s * 1e3
        draft = costs.draft_model_step_s
        round_ms = None if draft is None else (ROUND_K * draft + costs.verify_s[-1]) * 1e3
        out.append(PrecisionTiming(dtype, step, round_ms))
    return out


def verdict(timings: Sequence[PrecisionTiming]) -> str:
    """One sentence: which precision decodes faster here, plainly and speculatively, and on which CPU."""
    fast = min(timings, key=lambda t: t.target_step_ms)
    slow = max(timings, key=lambda t: t.target_step_ms)
    parts = [f"On this machine ({cpu_model()}) a target step takes "
             + ", ".join(f"{t.target_step_ms:.1f} ms in {t.dtype}" for t in timings)]  # fmt: skip
    if all(t.round_ms is not None for t in timings):
        parts.append(
            f"a round of K = {ROUND_K} drafts and one verify pass "
            + ", ".join(f"{t.round_ms:.1f} ms in {t.dtype}" for t in timings)
        )
    ratio = slow.target_step_ms / fast.target_step_ms
    return "; ".join(parts) + f": {fast.dtype} is {ratio:.2f}x faster here."
