"""Many prompts x methods x K: each run paired with a plain run of the same prompt, timed in the same session.

`run_workload` takes any source of runs (a function prompt, settings, tag -> RunRecord): the in-process engine today,
a serving engine tomorrow. It yields results as they finish, so a caller that stops iterating keeps what it has.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace
from typing import Callable, Iterable, Iterator

from specviz.core.record import RunRecord
from specviz.core.settings import RunSettings
from specviz.measure.prompts import PromptRow

RunSource = Callable[[str, RunSettings, str], RunRecord]  # (prompt, settings, tag) -> the run's record
LEGACY_KEYS = ("prompt", "tag", "method", "k", "alpha", "tau", "proposed", "accepted", "judged", "acceptance_rate",
               "rounds", "committed", "tokens_per_s", "draft_ms", "verify_ms", "per_position", "accepted_lengths",
               "by_class", "tokens", "source", "text", "per_round_accepted", "per_round_drafted")  # fmt: skip


@dataclass(frozen=True)
class PairedRun:
    """A speculative run and the plain run of the same prompt it is compared with."""

    run: RunRecord
    plain: RunRecord

    def __getattr__(self, name: str):
        if name in ("run", "plain"):  # not set yet (while unpickling): never recurse
            raise AttributeError(name)
        return getattr(self.run, name)  # the run's own fields and statistics

    @property
    def plain_tokens_per_s(self) -> float:
        return self.plain.tokens_per_s

    @property
    def speedup(self) -> float:
        return self.run.tokens_per_s / self.plain.tokens_per_s if self.plain.tokens_per_s else math.nan

    def to_dict(self) -> dict:
        """One entry of the workload JSON's runs[] (its keys are stable; new ones may be added)."""
        from specviz.core import stats

        full = self.run.to_dict()
        return {
            **{key: full[key] for key in LEGACY_KEYS},
            "plain_tokens_per_s": self.plain_tokens_per_s,
            "speedup": self.speedup,
            "vllm_metrics": stats.vllm_metrics([self.run]),
        }


@dataclass(frozen=True)
class Progress:
    done: int
    total: int
    prompt: str
    elapsed_s: float

    @property
    def eta_s(self) -> float:
        return self.elapsed_s / self.done * (self.total - self.done) if self.done else math.nan


def run_workload(
    run: RunSource,
    rows: Iterable[PromptRow],
    method_names: Iterable[str],
    ks: Iterable[int],
    base: RunSettings,
    on_progress: Callable[[Progress], None] | None = None,
) -> Iterator[PairedRun]:
    """For each prompt: one plain run, then every method x K; yields results as they finish."""
    rows, method_names, ks = list(rows), list(method_names), list(ks)
    for method in ["plain", *method_names]:  # warm-up: first calls pay for allocation and kernel selection
        run(rows[0].prompt, replace(base, method=method, k=ks[0], max_new_tokens=min(8, base.max_new_tokens)), "")
    total, done, start = len(rows) * len(method_names) * len(ks), 0, time.perf_counter()
    for row in rows:
        plain = run(row.prompt, replace(base, method="plain"), row.tag)
        for method in method_names:
            for k in ks:
                if on_progress:
                    on_progress(Progress(done, total, row.prompt, time.perf_counter() - start))
                yield PairedRun(run(row.prompt, replace(base, method=method, k=k), row.tag), plain)
                done += 1
    if on_progress:
        on_progress(Progress(done, total, "", time.perf_counter() - start))
