"""Go / no-go: the method and K with the best measured speedup, whether it pays, and how to deploy it.

A verdict needs enough prompts (MIN_PROMPTS): its interval resamples prompts and, within each, the timing repeats, so
both the prompt-to-prompt spread and the clock noise widen it. The best of several settings, picked on the same
prompts it is judged on, is an optimistic figure: the verdict says so whenever it picked among several. A figure that
cannot be true (above τ) earns no GO, and a verdict timed on a busy machine says so (measure/verdict_rule.py, where
the rule and its minimum live, shared with the ranking's best lines).

The whole workload is judged ("all"), and so is each tag when the prompts carry two or more: code can pay where prose
does not. Every figure a verdict states is read from the summary rows (measure/summary.py summarize), the same rows the
page's table, the command line's table and the JSON's summary show, so the prose and the tables cannot disagree.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from specviz import methods
from specviz.core.record import ENGINE
from specviz.engine.costs import MeasuredCosts
from specviz.measure.predict import predict
from specviz.measure.ranking import setting_of
from specviz.measure.summary import ALL, groups, summarize
from specviz.measure.verdict_rule import (
    GO_SPEEDUP,
    MIN_PROMPTS,
    NO_DOUBT,
    RULE,
    Doubt,
    counted,
    has_verdict,
    speedup_doubt,
)
from specviz.measure.workload import PairedRun

RULE_BEFORE_A_RUN = (  # what the workload page says before anything is measured: the rule and the minimum, from here
    f"The go / no-go: {RULE}, over at least {MIN_PROMPTS} prompts (fewer give the figures but no verdict); each tag "
    "with its own prompts is judged by the same rule. Deployment settings are offered only for a GO."
)
MEAN, INTERVAL = "mean", "interval"  # the parts of the rule a NO-GO can fail
GO, NO_GO, NO_VERDICT = "GO", "NO-GO", "no verdict"


@dataclass(frozen=True)
class Recommendation:
    go: bool | None  # None: too few prompts or no speedup measured for a verdict
    reason: str
    method: str
    k: int
    measured_speedup: float | None
    speedup_ci: tuple[float, float]
    predicted_speedup: float | None
    vllm_config: dict | None
    hf_generate: str | None
    tag: str = ALL  # the prompts judged: ALL, or one tag's
    source: str = ENGINE
    prompts: int = 0
    alpha: float | None = None
    failed: tuple[str, ...] = ()  # a NO-GO's failed parts of the rule: MEAN, INTERVAL or both
    draft_vocab: int = 0  # the draft vocabulary the judged runs drafted from (0 = every token; only a draft model's)
    setting: str = ""  # the setting in the ranking's words ("draft model, K = 4"): ranking.setting_of
    doubts: tuple[str, ...] = ()  # why its timing cannot be trusted (verdict_rule.speedup_doubt); a GO is withheld
    #                               when its figure cannot be true, qualified for the rest

    @property
    def verdict(self) -> str:
        return NO_VERDICT if self.go is None else GO if self.go else NO_GO

    @property
    def scope(self) -> str:
        """Which prompts the verdict is about, in words (a tag is the user's text: a page shows it through literal)."""
        return "all prompts" if self.tag == ALL else f"prompts tagged {self.tag!r}"

    @property
    def offered(self) -> bool:
        """Whether there are settings to deploy: only for a GO. A NO-GO says decode plainly; without a verdict (too
        few prompts, no speedup measured) nothing is shown to pay. The page and the JSON both ask this."""
        return self.go is True and (self.vllm_config is not None or self.hf_generate is not None)

    @property
    def deploy_note(self) -> str:
        """What the offered settings cannot say of the measurement: a trimmed draft vocabulary ("" when nothing)."""
        if not self.draft_vocab:
            return ""
        return (
            f"Measured with the draft's vocabulary trimmed to its {self.draft_vocab} most frequent tokens (draft "
            f"vocabulary {self.draft_vocab}). Neither vLLM's --speculative-config for a draft model nor Hugging "
            "Face's generate() has an option to trim a draft's vocabulary, so these settings run the whole draft, "
            "whose steps cost more than the ones measured here: set the draft vocabulary to 0 (every token) and "
            "measure again to time what they deploy."
        )

    def to_dict(self) -> dict:
        """One entry of the JSON's verdict.groups; deployment settings only when `offered` (a GO)."""
        return {
            "tag": self.tag,
            "verdict": self.verdict,
            "go": self.go,
            "failed": list(self.failed),
            "source": self.source,
            "method": self.method,
            "k": self.k,
            "prompts": self.prompts,
            "speedup": self.measured_speedup,
            "speedup_ci": list(self.speedup_ci),
            "predicted_speedup": self.predicted_speedup,
            "alpha": self.alpha,
            "reason": self.reason,
            "doubts": list(self.doubts),
            "vllm_config": self.vllm_config if self.offered else None,
            "hf_generate": self.hf_generate if self.offered else None,
            "draft_vocab": self.draft_vocab,  # what the runs drafted from; the settings cannot say it (deploy_note)
            "deploy_note": self.deploy_note if self.offered else None,
        }


def judge(
    results: Sequence[PairedRun],
    draft_source: str | None,
    temperature: float,
    costs: MeasuredCosts | None = None,
    seed: int = 0,
    summary: list[dict] | None = None,
) -> list[Recommendation]:
    """The verdict on all prompts, then one per tag when the prompts carry two or more tags (in the summary's order).

    summary: summarize(results, costs, seed), when the caller has it (the page shows it): the verdicts read their
    figures from it."""
    summary = summarize(results, costs, seed) if summary is None else summary
    tags = list(dict.fromkeys(row["tag"] for row in summary))  # ALL first
    by_group = groups(results)
    return [
        _judge(tag, [row for row in summary if row["tag"] == tag], by_group, draft_source, temperature, costs)
        for tag in (tags if len(tags) > 2 else tags[:1])  # one tag besides ALL: its verdict is ALL's
    ]


def recommend(
    results: Sequence[PairedRun],
    draft_source: str | None,
    temperature: float,
    costs: MeasuredCosts | None = None,
    seed: int = 0,
) -> Recommendation | None:
    """The verdict on all prompts: the best measured setting, with its interval and the prediction beside it."""
    verdicts = judge(results, draft_source, temperature, costs, seed)
    return verdicts[0] if verdicts else None


def verdict_document(verdicts: Sequence[Recommendation]) -> dict:
    """The go / no-go as the workload JSON and CSV carry it: the rule, then one entry per group judged."""
    return {
        "rule": RULE,
        "go_speedup": GO_SPEEDUP,
        "min_prompts": MIN_PROMPTS,
        "groups": [v.to_dict() for v in verdicts],
    }


def verdict_line(v: Recommendation) -> str:
    """One verdict as the command line prints it."""
    return f"{v.verdict} for {v.scope}: {v.reason}"


def _judge(tag, rows, by_group, draft_source, temperature, costs) -> Recommendation:
    best = max(rows, key=lambda row: row["speedup"] or 0.0)  # the first of equals, in the summary's order
    runs = [r.run for r in by_group[(tag, best["source"], best["method"], best["k"])]]
    entry, settings = methods.get(best["method"]), runs[0].settings
    setting = setting_of(best["method"], best["k"], settings)
    doubt = speedup_doubt(setting, by_group[(tag, best["source"], best["method"], best["k"])], costs)
    go, failed, reason = _verdict(best, setting, len(rows), predict(runs, costs), doubt)
    trims = entry.loads_draft and entry.engine == methods.SPECVIZ  # HF's lanes draft with the whole draft model
    chain = not (settings.get("tree") and entry.takes_tree)  # vLLM's configs here are chains: none for a tree run
    return Recommendation(
        go,
        reason,
        best["method"],
        best["k"],
        best["speedup"],
        tuple(best["speedup_ci"]),
        best["predicted_speedup"],
        entry.vllm_config(best["k"], draft_source, settings.get("ngram_min", 1), settings.get("ngram_max", 3))
        if chain
        else None,
        entry.hf_generate_call(best["k"], temperature, settings.get("ngram_max", 3)) if chain else None,
        tag,
        best["source"],
        best["prompts"],
        best["alpha"],
        failed,
        int(settings.get("draft_vocab") or 0) if trims else 0,
        setting,
        doubt.reasons,
    )


def _verdict(
    row: dict, setting: str, candidates: int, prediction, doubt: Doubt = NO_DOUBT
) -> tuple[bool | None, tuple[str, ...], str]:
    """(go, the failed parts, the sentence) for the best summary row of a group, among `candidates` settings. A figure
    that cannot be true (doubt.impossible) earns no GO; every verdict says what casts doubt on its timing."""
    measured, ci, prompts, alpha = row["speedup"], row["speedup_ci"], row["prompts"], row["alpha"]
    if measured is None:
        return None, (), "No speedup was measured (no plain run to compare with), so there is no go / no-go."
    alpha_text = "α not reported" if alpha is None else f"α {alpha:.2f}"
    over = f"over {counted(prompts, 'prompt')} and {'its' if prompts == 1 else 'their'} timing repeats"
    figure = f"{measured:.2f}x (95% CI {ci[0]:.2f}x–{ci[1]:.2f}x {over})"
    told = doubt.words()
    if not has_verdict(prompts):
        few = f"a go / no-go needs at least {MIN_PROMPTS} prompts, so there is no verdict yet: measure more prompts"
        return None, (), f"{setting} measured {figure} at {alpha_text}; {few}.{told}"
    picked = (
        f" It is the best of {candidates} settings measured on these same prompts, so this figure is optimistic: "
        "confirm it on prompts it was not picked on."
        if candidates > 1
        else ""
    )
    failed = tuple(part for part, bad in ((MEAN, measured < GO_SPEEDUP), (INTERVAL, not ci[0] > 1.0)) if bad)
    if not failed and doubt.impossible:
        return (
            None,
            (),
            (
                f"{setting} measured {figure} at {alpha_text}, which would pass the rule ({RULE}), but a figure that "
                f"cannot be true earns no GO.{told}"
            ),
        )
    if not failed:
        return True, (), f"{setting} measured {figure} at {alpha_text} ({RULE}).{picked}{told}"
    why = ""
    if prediction and prediction.speedup >= measured:  # a prediction below the measured figure explains nothing
        why = (
            f": a draft step costs c = {prediction.c:.2f} of a target step and a verify pass "
            f"{prediction.verify_cost:.2f} "
            f"steps here, so even without loop overhead the model passes allow only {prediction.speedup:.2f}x"
        )
    parts = {MEAN: f"it is under {GO_SPEEDUP:.2f}x", INTERVAL: "its interval reaches 1.00x or below"}
    short = f"{RULE}: {', and '.join(parts[part] for part in failed)}"
    advice = f"Decode plainly, or try a cheaper or better-matched proposer.{picked}"
    return (
        False,
        failed,
        f"The best setting ({setting}) measured {figure} at {alpha_text}{why}. {short}. {advice}{told}",
    )
