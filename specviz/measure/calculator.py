"""The speedup calculator's decisions, without Streamlit: whose c the formulas use (the slider's or a measured one),
which verify cost applies, and what is said when a measurement is missing, implausible or did not time the drafter.

pages/calculator.py draws; everything here takes plain values (the widgets' states, a MeasuredCosts) and is tested in
tests/measure/test_calculator.py.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from specviz import methods
from specviz.core import stats, tree_theory
from specviz.core.record import RunRecord
from specviz.core.theory import VerifyCost
from specviz.engine.costs import C_DRAFTERS, MeasuredCosts
from specviz.viz.notes import CAPTION, WARNING, Note

VERIFY_MODES = ("ideal (one target step)", "linear model", "measured on this machine")
TREE_VERIFY = ("flat in the nodes (GPU-like)", "grows with the nodes (linear)", "measured on this machine")
TREE_RATES = ("one α with a decay per sibling", "per-sibling rates")


def offered_drafters(has_draft: bool, heads: Collection[str]) -> list[str]:
    """The drafters whose c can be measured for a pair: the draft model where it has one, the feature heads found
    beside its target (`heads`, as the race finds them), early exit, and the lookups (c = 0)."""
    return [m for m in methods.with_heads(C_DRAFTERS, heads) if m != methods.DRAFT or has_draft]


def not_offered_words(offered: Collection[str]) -> str | None:
    """Which drafters this pair cannot time and how to get them, or None when every one is offered."""
    missing = [m for m in C_DRAFTERS if m not in offered]
    if not missing:
        return None
    return (
        f"Not offered for this pair: {', '.join(methods.label(m) for m in missing)} (no draft model, or no such "
        "head beside the target: `python -m specviz train-tiny` trains the bundled target's heads)."
    )


def chosen_drafter(picked: str | None, offered: Sequence[str]) -> str:
    """Whose c the measured mode uses (read before its picker is drawn): the picker's choice, else the first offered."""
    return picked if picked is not None and picked in offered else offered[0]


def usable(costs: MeasuredCosts | None) -> MeasuredCosts | None:
    """The measurement the formulas may build on: none at all, or one whose timings cannot be true, gives None."""
    return costs if costs is not None and not costs.implausible else None


def measured_c_of(costs: MeasuredCosts | None, drafter: str) -> float | None:
    """The measured c of `drafter`; None without a usable measurement or when the measurement did not time it."""
    good = usable(costs)
    return good.c_of(drafter) if good is not None else None


def uses_measured_c(verify_mode: str | None, ticked: bool, drafter_c: float | None) -> bool:
    """Whether the formulas use the measured c (and the c slider is disabled): the measured mode is on, "Use the
    measured c" is ticked, and the measurement timed the drafter."""
    return drafter_c is not None and verify_mode == VERIFY_MODES[2] and ticked


def c_slider_label(drafter: str, drafter_c: float | None, measured: bool) -> str:
    """The c slider's label: it names the measured c when that, not the slider, is in use."""
    used = f": the {methods.label(drafter)}'s measured {drafter_c:.3f} is used" if measured else ""
    return f"c (draft step / target step){used}"


def verify_cost(verify_mode: str, per_token: float, costs: MeasuredCosts | None) -> VerifyCost:
    """v(K) for the chosen mode: ideal, linear in the drafts, or measured (ideal until a measurement holds)."""
    if verify_mode == VERIFY_MODES[1]:
        return VerifyCost.linear(per_token)
    good = usable(costs)
    if verify_mode == VERIFY_MODES[2] and good is not None:
        return good.verify_cost()
    return VerifyCost.ideal()


def measurement_note(costs: MeasuredCosts | None, drafter: str, exit_layer: int) -> Note | None:
    """What the measured mode says about the measurement before its numbers: none yet, implausible, the drafter not
    timed, or timed at another exit layer; None when the numbers speak for themselves."""
    if costs is None:
        return Note(WARNING, "No measurement yet: press the button. Until then the ideal verify cost is used.")
    if costs.implausible:
        return Note(
            WARNING,
            f"These timings cannot be true: {costs.implausible} Until a measurement holds, the ideal verify cost and "
            "the c slider are used.",
        )
    if costs.c_of(drafter) is None:
        return Note(
            WARNING,
            f"This measurement did not time the {methods.label(drafter)}'s step: press Measure again to time it. "
            "Until then the c slider is used (the verify cost is measured).",
        )
    if methods.get(drafter).exits_early and costs.exit_layer != exit_layer:
        return Note(CAPTION, f"Measured at E = {costs.exit_layer}: press Measure again for E = {exit_layer}.")
    return None


def draft_step_value(drafter_c: float | None, step_s: float | None) -> str:
    """The "Draft step" metric: a lookup runs no model, an untimed drafter says so, else milliseconds."""
    return "no model run" if drafter_c == 0 else "not timed" if step_s is None else f"{step_s * 1e3:.2f} ms"


def whose_c(costs: MeasuredCosts, drafter: str, layers: int | None) -> str:
    """What the measured c of `drafter` is a ratio of, in words (early exit: beside E/L, what it should be near;
    `layers` is the target's L, None where it is not known)."""
    name = methods.label(drafter)
    cost = methods.get(drafter).draft_cost
    if cost == methods.HOST_LOOKUP:
        return f"c of {name}: 0, a search over tokens already known on the host, no model run"
    if cost == methods.HEADS_PASS:
        n = costs.pass_drafts.get(drafter, 0)
        return f"c of the {name}: one pass of all {n} heads / {n} / one target step"
    if cost == methods.EXIT_LAYERS_STEP:
        ratio = f" (E/L = {costs.exit_layer}/{layers} = {costs.exit_layer / layers:.2f})" if layers else ""
        return f"c of {name} at E = {costs.exit_layer}: its first E layers + LM head / one target step{ratio}"
    if cost == methods.FEATURE_HEAD_STEP:
        return f"c of the {name}: one head step (its layer + an LM head) / one target step"
    return f"c of the {name}: one draft step / one target step"


def costs_caption(costs: MeasuredCosts, drafter: str) -> str:
    """Where the timings come from; for the draft model timed trimmed, also the whole draft's c."""
    trimmed = (
        f" · draft proposing from its {costs.draft_vocab} most frequent tokens (the whole draft: c = "
        f"{costs.untrimmed_c:.3f})"
        if costs.draft_vocab and drafter == methods.DRAFT
        else ""
    )
    return (
        f"{costs.target_name} ← {costs.draft_name} · {costs.device} · {costs.dtype} · median of {costs.repeats}"
        + trimmed
    )


def tree_verify_note(costs: MeasuredCosts | None) -> Note:
    """What the tree section says of its measured verify cost: none yet (flat until then), or how far it reaches."""
    if costs is None:
        return Note(
            WARNING, "No measurement yet: choose 'measured on this machine' above and press Measure. Flat until then."
        )
    return Note(
        CAPTION,
        f"Measured for up to {costs.k_max} drafted tokens; larger trees extend the measured costs along their "
        "least-squares line (an extrapolation, not a measurement).",
    )


@dataclass(frozen=True)
class RunRates:
    """Per-position acceptance rates taken from runs: the text box's value, the drafts reaching each position, and
    the note under it."""

    text: str
    counts: tuple[int, ...]
    note: str


def rates_from_records(records: Sequence[RunRecord]) -> RunRates:
    """The conditional acceptance rate at each position over `records` (one run per workload prompt, at T = 1)."""
    rates, counts = stats.conditional_rates(records)
    return RunRates(
        ", ".join(f"{r:.3f}" for r in rates),
        counts,
        f"From {len(records)} workload prompts at T = 1: drafts reaching each position {list(counts)}.",
    )


def break_even_help(k: int, max_k: int, any_k: float | None, best_at: int | None) -> str:
    """The break-even metric's help: what break-even at this K means, and the smallest over every K."""
    return (
        f"the α at which K = {k} breaks even, S(α, {k}) = 1: above it this K pays. Over every K = 1..{max_k} the "
        + ("smallest is none: no K pays" if any_k is None else f"smallest is {any_k:.3f}, at K = {best_at}")
    )


def cpu_tree_words() -> str:
    """The trees measured on this project's CPU: τ per shape, and why the wider trees gained no wall-clock time."""
    return (
        f"**Measured on this CPU** ({tree_theory.CPU_TREE_MEASUREMENT}), τ = tokens per target pass: "
        + "; ".join(f"{name} {tau:.2f}" for name, tau in tree_theory.CPU_TREE_TAU)
        + f". The wider trees commit more tokens per pass, but there was {tree_theory.CPU_TREE_WALL}: each extra node "
        "makes the verify pass dearer on a CPU."
    )
