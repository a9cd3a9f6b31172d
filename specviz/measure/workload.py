"""Many prompts x methods x K: each run paired with plain runs of the same prompt, timed in the same session.

`run_workload` takes any source of runs (a function prompt, settings, tag -> RunRecord): the in-process engine, or a
serving engine (specviz.remote.vllm.measure), which has no plain baseline (baseline=False). It yields results as they
finish, so a caller that stops iterating, or meets an error, keeps what it has.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from specviz import methods
from specviz.core import stats
from specviz.core.record import JSON, RunRecord, result_columns
from specviz.core.settings import RunSettings, for_method
from specviz.errors import SettingsError, SpecvizError
from specviz.measure.prompts import PromptRow

if TYPE_CHECKING:
    from specviz.engine.loading.models import ModelPair

RunSource = Callable[[str, RunSettings, str], RunRecord]  # (prompt, settings, tag) -> the run's record


@dataclass(frozen=True)
class PairedRun:
    """A run and the plain runs of the same prompt it is compared with, once per timing repeat.

    Every repeat makes the same tokens and decisions (same settings and seed); only the clocks differ, so the
    statistics come from the first run and the repeats give the timing noise within a prompt. Without a plain run
    (a source that cannot run one) the speedup is None: not measured, never guessed."""

    runs: tuple[RunRecord, ...]
    plains: tuple[RunRecord, ...] = ()

    @property
    def run(self) -> RunRecord:
        return self.runs[0]

    def __getattr__(self, name: str):
        if name in ("runs", "plains"):  # not set yet (while unpickling): never recurse
            raise AttributeError(name)
        return getattr(self.run, name)  # the run's own fields and statistics

    @property
    def tokens_per_s(self) -> float:
        return statistics.median(r.tokens_per_s for r in self.runs)

    @property
    def plain_tokens_per_s(self) -> float | None:
        return statistics.median(p.tokens_per_s for p in self.plains) if self.plains else None

    @property
    def speedups(self) -> tuple[float, ...]:
        """Speedup of each timing repeat over the plain run of the same repeat."""
        return tuple(r.tokens_per_s / p.tokens_per_s for r, p in zip(self.runs, self.plains) if p.tokens_per_s)

    @property
    def speedup(self) -> float | None:
        return statistics.mean(self.speedups) if self.speedups else None

    @property
    def speedup_low(self) -> float | None:
        """The lowest of the repeats' speedups (with speedup_high, the spread of this prompt's figure)."""
        return min(self.speedups) if self.speedups else None

    @property
    def speedup_high(self) -> float | None:
        return max(self.speedups) if self.speedups else None

    def to_dict(self) -> dict:
        """One entry of the workload JSON's runs[] (its keys are stable; new ones may be added)."""
        paired = {
            "tokens_per_s": self.tokens_per_s,
            "plain_tokens_per_s": self.plain_tokens_per_s,
            "speedup": self.speedup,
            "speedup_low": self.speedup_low,
            "speedup_high": self.speedup_high,
        }
        full = {**self.run.to_dict(), **paired}
        return {
            **{key: full[key] for key in result_columns(JSON)},
            "speedup_repeats": list(self.speedups),
            "vllm_metrics": stats.vllm_metrics([self.run]),
            **({"server": self.run.meta["server"]} if "server" in self.run.meta else {}),  # a served run's URL
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
    repeats: int = 1,
    baseline: bool = True,
) -> Iterator[PairedRun]:
    """For each prompt, `repeats` times: one plain run (unless baseline is False) and every method x K, in alternating
    order (plain first on even repeats, last on odd ones: measure/timing.py's protocol); yields each
    prompt's results when its repeats are done. Every run makes exactly base.max_new_tokens tokens (EOS ignored, as
    vLLM's and Spec-Bench's benchmarks do), so every speed is timed over the same length and a run that stops after
    two tokens cannot masquerade as a speed. An empty workload is refused here, before any run."""
    rows, method_names, ks = list(rows), list(method_names), list(ks)
    if not rows or not method_names or not ks:
        raise SettingsError("Nothing to measure: give at least one prompt, one method and one K.")
    return _paired_runs(run, rows, method_names, ks, base, on_progress, repeats, baseline)


def _paired_runs(run, rows, method_names, ks, base, on_progress, repeats, baseline) -> Iterator[PairedRun]:
    """run_workload's loop: a warm-up per method, then every prompt x method x K, `repeats` times."""
    base = replace(base, stop_at_eos=False)
    for method in [methods.PLAIN, *method_names][0 if baseline else 1 :]:  # warm-up: first calls pay for allocation
        run(rows[0].prompt, for_method(base, method, k=ks[0], max_new_tokens=min(8, base.max_new_tokens)), "")
    total, done, start = len(rows) * len(method_names) * len(ks) * repeats, 0, time.perf_counter()
    for row in rows:
        plains, runs = [], {}
        for rep in range(repeats):  # alternating order (timing.alternate): plain first, then last, then first...
            if baseline and rep % 2 == 0:
                plains.append(run(row.prompt, replace(base, method=methods.PLAIN), row.tag))
            for method, k in [(m, k) for m in method_names for k in ks][:: 1 if rep % 2 == 0 else -1]:
                if on_progress:
                    on_progress(Progress(done, total, row.prompt, time.perf_counter() - start))
                runs.setdefault((method, k), []).append(run(row.prompt, for_method(base, method, k=k), row.tag))
                done += 1
            if baseline and rep % 2 == 1:
                plains.append(run(row.prompt, replace(base, method=methods.PLAIN), row.tag))
        for timed in runs.values():
            yield PairedRun(tuple(timed), tuple(plains))
    if on_progress:
        on_progress(Progress(done, total, "", time.perf_counter() - start))


def runnable_rows(
    pair: ModelPair, rows: Iterable[PromptRow], settings: Iterable[RunSettings]
) -> tuple[list[PromptRow], list[str]]:
    """The rows whose prompt this pair can run with every one of settings, and "line N: why" for the others; a
    workload none of whose prompts fits is refused (SettingsError) before any run."""
    from specviz.engine.decode import check_fits, encode_prompt

    settings = list(settings)
    fits, problems = [], []
    for row in rows:
        try:
            ids = encode_prompt(pair, row.prompt)
            for each in settings:
                check_fits(pair, ids, each)
            fits.append(row)
        except SpecvizError as exc:
            problems.append(f"{row.where}: {exc}")
    if not fits:
        raise SettingsError(_none_runs(pair, settings[0].max_new_tokens, problems))
    return fits, problems


def _none_runs(pair: ModelPair, max_new_tokens: int, problems: list[str]) -> str:
    """Why no prompt of a workload can run: the rule that every one broke, or the first reason and how many more."""
    if not problems:
        return "This workload has no prompts to run."
    if all("context of" in p for p in problems):
        return (
            f"Every prompt ({len(problems)}) is longer than the model's context of {pair.context_length} tokens "
            f"allows with {max_new_tokens} new tokens; the first: {problems[0]}"
        )
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    return f"No prompt of this workload can run: {problems[0]}{more}"
