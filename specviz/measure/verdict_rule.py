"""When a workload's figures earn a verdict: enough prompts, and a timing that can be true.

The verdicts (measure/recommend.py), the ranking's best lines (measure/ranking.py), the tables' warnings and the
command line all ask here, so a tag never reads "it beats plain decoding" above "no verdict yet", and a speedup that
cannot be true is said to be so wherever it is shown.

A speedup cannot be true above τ (measure/timing.py above_tau, the rule the race's lanes and its K sweep judge by):
each target pass costs at least a plain step and commits τ tokens on average. A workload's speedup is the mean over
prompts of each prompt's own speedup, so the bound it is held to is the mean of the prompts' own τ (the τ a table
shows is pooled over every round, and a prompt with many short rounds weighs more in it). Such a figure earns no GO.
The step costs timed just before the workload can also be impossible (engine/costs.py MeasuredCosts.implausible: a
verify pass timed under a one-token step): the machine was busy then, and a verdict measured on it says so.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from specviz.core import stats
from specviz.engine.costs import MeasuredCosts
from specviz.measure.timing import above_tau, above_tau_words
from specviz.measure.workload import PairedRun

MIN_PROMPTS = 5  # fewer prompts: no verdict (a bootstrap over 1-3 prompts under-covers badly)
GO_SPEEDUP = 1.1  # the mean must reach this, and the interval's lower end must be above 1
RULE = f"GO needs a mean speedup of at least {GO_SPEEDUP:.2f}x with the interval's lower end above 1.00x"
AGAIN = "Measure again on a quieter machine."


def counted(n: int, noun: str) -> str:
    """'1 prompt', '3 prompts'."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def has_verdict(prompts: int) -> bool:
    """Whether a group of this many prompts is judged at all: the one minimum for the verdicts and the best lines."""
    return prompts >= MIN_PROMPTS


def too_few_words(prompts: int) -> str:
    """Why a group gets no verdict for its size, as a clause."""
    return (
        f"measured on {counted(prompts, 'prompt')}, too few for a go / no-go (it needs at least {MIN_PROMPTS}), so "
        "there is no verdict yet"
    )


@dataclass(frozen=True)
class Doubt:
    """What is wrong with a setting's timing: its figure cannot be true (impossible), and what else casts doubt on it
    (prompts measured above their own τ, step costs timed while the machine was busy)."""

    impossible: str | None = None  # the mean speedup is above its τ: no GO on it
    qualms: tuple[str, ...] = ()

    @property
    def reasons(self) -> tuple[str, ...]:
        return ((self.impossible,) if self.impossible else ()) + self.qualms

    def __bool__(self) -> bool:
        return bool(self.reasons)

    def words(self) -> str:
        """' Its timing cannot be trusted: ...; ... Measure again on a quieter machine.' ('' when nothing is wrong);
        'is in doubt' where the figure itself can be true."""
        if not self:
            return ""
        how = "cannot be trusted" if self.impossible else "is in doubt"
        return f" Its timing {how}: {'; '.join(self.reasons)}. {AGAIN}"


NO_DOUBT = Doubt()


def speedup_doubt(setting: str, group: Sequence[PairedRun], costs: MeasuredCosts | None = None) -> Doubt:
    """Whether the mean speedup of one setting's results can be true (see the module's docstring)."""
    measured = [(res.speedup, res.run.tau) for res in group if res.speedup is not None and res.run.tau]
    qualms = []
    impossible = None
    if measured:
        speedup = statistics.fmean(s for s, _ in measured)
        bound = statistics.fmean(t for _, t in measured)
        if above_tau(speedup, bound):
            pooled = stats.tau([res.run for res in group])
            tau_is = "" if pooled is not None and round(pooled, 2) == round(bound, 2) else " (its prompts' mean τ)"
            impossible = above_tau_words(setting, speedup, bound, tau_is)
        over = [(s, t) for s, t in measured if above_tau(s, t)]
        if over and impossible is None:
            s, t = max(over, key=lambda pair: pair[0] / pair[1])
            whose = "its" if len(over) == 1 else "their"
            qualms.append(
                f"{setting}: {counted(len(over), 'prompt')} of {len(measured)} measured above {whose} own τ (e.g. "
                f"{s:.2f}x at τ {t:.2f}), more than any pass can give"
            )
    if busy := busy_costs_words(costs):
        qualms.append(busy)
    return Doubt(impossible, tuple(qualms))


def busy_costs_words(costs: MeasuredCosts | None) -> str | None:
    """Why step costs timed before the workload say the machine was busy, as a clause; None when they can be true."""
    if costs is None or not costs.implausible:
        return None
    reason = costs.implausible.removesuffix(" Run again on a quieter machine.").removesuffix(" Run again.")
    return f"the step costs timed just before the workload cannot be true ({reason.rstrip('.')})"
