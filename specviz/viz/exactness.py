"""The exactness lab's decisions and words, without Streamlit: the editable tables as rows, which draft a section
uses, the public caps on the real pair's runs, and the verdicts' sentences (pages/exactness.py draws;
tests/viz/test_exactness_policy.py checks)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from specviz.core import lab
from specviz.viz.lab_charts import REAL_PAIR_LEVEL, power_note
from specviz.viz.notes import CAPTION, ERROR, SUCCESS, WARNING, Note
from specviz.viz.tables import format_p

PRESETS = {"the seed's draft (close to the target)": lab.SHOP_DRAFT, "a poor draft": lab.POOR_DRAFT}
BUG_DRAFTS = ("a poor draft (every bias easy to see)", "the draft table above")
TREE_HOWS = {v.label: v.how for v in lab.TREE_VARIANTS[:3]}
SIDES = {"the draft model": None} | {v.label: v.key for v in lab.EXIT_VARIANTS}  # who drafts, on the real target
REAL_SAMPLES = (50, 100, 200, 300, 500, 1000, 2000)


def rows_of(frame: pd.DataFrame) -> tuple:
    """An edited table as a tuple of rows of floats (hashable, for the cached experiments)."""
    return tuple(tuple(float(x) for x in row) for row in frame.to_numpy().tolist())


def table_frame(rows) -> pd.DataFrame:
    """Rows of a chain's table as the editor shows them: a row per previous event, a column per next event."""
    return pd.DataFrame([list(r) for r in rows], index=list(lab.ROWS), columns=list(lab.EVENTS))


def draft_rows_for(choice: str, edited: tuple) -> tuple:
    """The draft a bug or tree section uses: the poor draft, or the draft table edited above."""
    return rows_of(table_frame(lab.POOR_DRAFT)) if choice == BUG_DRAFTS[0] else edited


def alpha_words(alphas: Sequence[float]) -> str:
    """The shop model's α after each event."""
    return "α = Σ min(p, q) after each event: " + " · ".join(f"{n} {a:.2f}" for n, a in zip(lab.ROWS, alphas))


def variant_words(chosen: str, what: str, seen_in: str) -> str:
    """A bug switch in a sentence: what it does and, where it was seen, where."""
    return f"{chosen}: {what}." + (f" Where: {seen_in}." if seen_in else "")


def tree_extra(variant: lab.TreeVariant) -> tuple:
    """The switches of a combination not among the listed tree samplers, to check beside them (() when listed)."""
    listed = variant.key in lab.TREE_VARIANTS_BY_KEY
    return () if listed else (variant.how, variant.update_residual, variant.soft_q_for_top_b)


def tree_verdict(verdict: str, tv: float, variant: lab.TreeVariant, depth: int) -> Note:
    """The tree sampler's verdict over sequences one event longer than the tree is deep, with why."""
    why = f"{variant.label}: {variant.why}."
    if verdict == lab.EXACT_VERDICT:
        return Note(SUCCESS, f"Exact to 1e-9 over {depth + 1}-event sequences. {why}")
    return Note(WARNING, f"Not exact: the output is {tv:.3g} in total variation away from p. {why}")


@dataclass(frozen=True)
class Caps:
    """The real pair's widgets' ranges under the public limits."""

    samples: tuple[int, ...]  # the sample counts offered
    samples_default: int
    longest_s: int  # the time budget slider's top
    budget_default: int
    most_tokens: int  # the greedy check's token slider's top
    tokens_default: int
    k_top: int
    k_default: int


def caps(max_lab_samples: int, max_lab_seconds: int, max_new_tokens: int, max_k: int) -> Caps:
    """What the public caps leave of the real pair's choices (unlimited: every choice)."""
    samples = tuple(n for n in REAL_SAMPLES if n <= max_lab_samples)
    longest = max(5, min(120, max_lab_seconds))
    most_tokens = max(8, min(128, max_new_tokens))
    return Caps(
        samples, min(300, samples[-1]), longest, min(30, longest), most_tokens, min(48, most_tokens), min(8, max_k),
        min(4, max_k),
    )  # fmt: skip


def real_result(result, token_texts, side: str) -> dict:
    """What the page keeps of a real-pair sampling run (lab.TwoTokenSamples) between reruns."""
    return {
        "samples": result.samples,
        "requested": result.requested,
        "p_value": result.chi2.p_value,
        "dof": result.chi2.dof,
        "statistic": result.chi2.statistic,
        "stopped_early": result.stopped_early,
        "elapsed_s": result.elapsed_s,
        "rows": result.table(token_texts),
        "side": side,
    }


def real_notes(real: dict) -> list[Note]:
    """Above the real pair's numbers: the test's power (a warning if it stopped early), too few samples, the side."""
    requested = real.get("requested", real["samples"])
    power = power_note(real["samples"], requested, real["dof"], real["stopped_early"])
    notes = [Note(WARNING if real["stopped_early"] else CAPTION, power)]
    if real["dof"] < 1:
        notes.append(
            Note(WARNING, "Too few samples for a test: every outcome is rare. Raise the samples, or lower top-k.")
        )
    return [*notes, Note(CAPTION, f"Speculative side: {real.get('side', 'the draft model')}.")]


def real_verdict(p_value: float) -> str:
    """The χ² verdict on the real pair, with how often an exact sampler gets it wrong."""
    verdict = "the two samples differ" if p_value <= REAL_PAIR_LEVEL else "no difference detected"
    return f"Verdict: **{verdict}** ({format_p(p_value)}; an exact sampler gives p < 0.001 one time in a thousand)."


def exit_words(layer: int) -> str:
    """Above the early-exit table: what its columns are at that E."""
    return (
        f"At E = {layer}, the prompt's next token: the chance the draft is kept, and the total variation "
        "between the first committed token's distribution and p (exact, in float64; an exact sampler's is rounding)."
    )


def divergence_text(check) -> str:
    """Where the two paths parted, and whether their own logits put that within the precision's rounding."""
    head = (
        f"diverged at output token {check.first_divergence + 1}: plain {check.plain_token!r} vs speculative "
        f"{check.speculative_token!r}"
    )
    if check.within_rounding is None:
        return head + " (one path stopped at EOS there)."
    margins = (
        f"; the plain path's pass put its token ahead by {check.plain_margin:.2e} logits, the verify pass put the "
        f"other ahead by {check.speculative_margin:.2e}: the two passes moved those logits "
        f"{check.plain_margin + check.speculative_margin:.2e} apart, against {check.tolerance:.2e} = "
        f"{check.rounding_ulps} units in the last place of {check.dtype} at their size"
    )
    if check.within_rounding:
        return head + margins + ". Within rounding: passes of different shapes round differently; not a bug."
    return head + margins + ". Wider than rounding can explain: a bug."


def greedy_note(check) -> Note:
    """The greedy check's outcome: identical token for token, or where and why the paths parted."""
    if check.identical:
        return Note(SUCCESS, f"identical: {len(check.plain_ids)} tokens, token for token (K = {check.k}).")
    return Note(ERROR, divergence_text(check))
