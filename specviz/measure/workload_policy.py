"""The workload page's decisions, without Streamlit: what the results' caption says about how they were measured,
how a verdict is shown, why no deployment settings are offered, and what a server check found.

pages/workload.py and ui/workload_sections.py draw; everything here takes plain values and is tested in
tests/measure/test_workload_policy.py.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from specviz import methods
from specviz.core.settings import RunSettings
from specviz.measure.recommend import MIN_PROMPTS
from specviz.viz.notes import CAPTION, INFO, SUCCESS, WARNING, Note
from specviz.viz.text import literal


def run_context(base: RunSettings, meta: Mapping, served: bool, complete: bool) -> str:
    """What follows "N results measured": stopped early or not, the server, the sampling and the length."""
    sampling = base.sampling
    return (
        ("" if complete else " (stopped early: the finished ones are kept)")
        + (
            f" through {meta['server']} ({meta['model']}, {methods.label(meta['method'])}, K = {meta['k']})"
            if served
            else ""
        )
        + f" · {'greedy' if sampling.temperature == 0 else f'temperature {sampling.temperature:g}'}"
        + (f", top-k {sampling.top_k}" if sampling.top_k else "")
        + (f", top-p {sampling.top_p:g}" if sampling.top_p < 1 else "")
        + f", seed {base.seed}, {base.max_new_tokens} new tokens per run"
    )


def headline(go: bool | None, reason: str, speedup_measured: bool, no_speedup: str, doubted: bool = False) -> Note:
    """The recommendation's first line and how it is shown: `no_speedup` through a server (no plain baseline), "No
    verdict yet" below the minimum or when its figure cannot be true, else GO or NO-GO with the reason; a verdict
    whose timing is in doubt (Recommendation.doubts) is a warning, whatever it says."""
    if not speedup_measured:
        return Note(INFO, no_speedup)
    if go is None:
        return Note(WARNING if doubted else INFO, "No verdict yet. " + sentence_case(reason))
    if go:
        return Note(WARNING if doubted else SUCCESS, ("GO, in doubt: " if doubted else "GO: ") + reason)
    return Note(WARNING, "NO-GO: " + reason)


def tag_verdict(go: bool | None, tag: str, reason: str, doubted: bool = False) -> Note:
    """One tag's verdict line and how it is shown, by the same rule as the headline."""
    kind, word = {True: (SUCCESS, "GO"), False: (WARNING, "NO-GO"), None: (INFO, "No verdict yet")}[go]
    if doubted:
        kind, word = WARNING, ("GO, in doubt," if go else word)
    return Note(kind, f"{word} for prompts tagged **{literal(tag)}**: {reason}")


def no_deployment_words(go: bool | None, any_tag_passes: bool) -> str:
    """Why the recommended setting gets no vLLM or Hugging Face settings (it was not offered), and whether tags do."""
    why = {
        False: "for a NO-GO: decoding plainly is the recommendation",
        None: f"without a verdict (at least {MIN_PROMPTS} prompts): nothing is shown yet to pay",
    }.get(go, "for this setting: neither vLLM nor Hugging Face has it")
    return f"No deployment settings are offered {why}" + (
        ", except for the tags that pass, below." if any_tag_passes else "."
    )


def warns_of_greedy_drafts(served: bool, temperature: float, method: str | None) -> bool:
    """Whether to say that vLLM's draft model drafts greedily: a served draft-model run, sampled."""
    return served and temperature > 0 and method == methods.DRAFT


def warnings_words(warnings: Sequence[Sequence[str]]) -> str | None:
    """One sentence for the runs that carry warnings (each run's list), with the first as the example; None if none."""
    warned = [w for w in warnings if w]
    if not warned:
        return None
    return f"{len(warned)} run(s) carry warnings (in the JSON's meta.warnings), e.g.: {warned[0][0]}"


def server_found_words(found: Mapping) -> str:
    """What a server check found, as markdown: the server and its models, the method and K, which metrics it gives."""
    return (
        f"**{literal(found['server'])}** serves {', '.join(literal(repr(m)) for m in found['models'])} "
        f"(vLLM {literal(found['vllm_version'] or 'version not reported')}; "
        f"context {literal(found['max_model_len'] or '?')} tokens)"
        f"\n\n- speculative method: **{methods.label(found['method'])}**, K = **{found['k']}**"
        + "".join(f"\n  - {literal(note)}" for note in found["notes"])
        + "\n- per-request metrics: "
        + ("**on** (each step's drafted and accepted counts)" if found["per_request"] else "**off**")
        + "\n- Prometheus counters: "
        + (
            "**yes**" + ("" if found["per_request"] else " (totals per prompt, at concurrency 1 only)")
            if found["counters"]
            else "**none**"
        )
    )


def drafter_words(draft_shown: str | None, method: str) -> str:
    """Which drafter the server's pair runs beside its target, as far as vLLM says (`draft_shown` as displayed)."""
    if draft_shown:
        return f"the draft {literal(repr(draft_shown))}: vLLM does not say which draft it runs"
    return f"the {methods.label(method)} beside it: vLLM does not say which head it runs"


def compare_count(available: int, cap: int) -> tuple[int, int]:
    """The "prompts to compare" input's maximum and default: at most the cap, at least 1, 3 where there are 3."""
    return max(1, min(cap, available)), min(3, max(1, available))


def sentence_case(text: str) -> str:
    """The text with its first letter capitalised (the notes are written to follow a clause)."""
    return text[:1].upper() + text[1:]


def earlier_note(agree: bool, sentence: str) -> Note:
    """A comparison with an earlier measurement: a caption when it agrees, a warning when not."""
    return Note(CAPTION if agree else WARNING, sentence)
