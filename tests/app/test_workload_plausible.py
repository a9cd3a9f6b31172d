"""On the workload page: no GO on a speedup that cannot be (above τ, or timed while the step
costs say the machine was busy), and the numbers on one screen agree: a speedup beside tokens/s that are not its
ratio says why, a tag's best line and its verdict follow one rule, and the ranking's c never reads "None"."""

from __future__ import annotations

from dataclasses import replace

from app_helpers import open_page, text

from specviz.core.record import RunRecord
from specviz.core.settings import RunSettings
from specviz.engine.costs import MeasuredCosts
from specviz.measure.workload import PairedRun

META = {"target": "t", "draft": "d-model", "device": "cpu", "dtype": "float32"}


def run(method, k, drafted, accepted, wall, prompt, tag) -> RunRecord:
    committed = tuple(a + 1 for a in accepted)
    judged = tuple(min(a + 1, d) for a, d in zip(accepted, drafted))
    ends = tuple(wall * (i + 1) / len(committed) for i in range(len(committed)))
    body = replace(RunSettings(), method=method, k=max(k, 1), stop_at_eos=False).to_dict()
    return RunRecord(
        "specviz", method, k, prompt, "", tuple(range(sum(committed))), committed, drafted, accepted, judged, ends,
        wall, settings=body, tag=tag,
    )  # fmt: skip


def paired(method, speedups, prompt, tag, plain_wall=0.07) -> PairedRun:
    """7 tokens a run: the draft model in 2 passes (τ 3.50), the n-gram lookup finding nothing (7 passes, τ 1.00)."""
    drafted, accepted = ((4, 4), (3, 2)) if method == "draft" else ((0,) * 7, (0,) * 7)
    plains = tuple(run("plain", 0, (0,) * 7, (0,) * 7, plain_wall, prompt, tag) for _ in speedups)
    return PairedRun(tuple(run(method, 4, drafted, accepted, plain_wall / s, prompt, tag) for s in speedups), plains)


def costs(verify=(1.1, 1.2, 1.3, 1.4)) -> MeasuredCosts:
    return MeasuredCosts("t", "d", "cpu", "float32", 20, 5, {"draft": 0.002}, 0.01, tuple(v * 0.01 for v in verify))


def shown(records, measured_costs):
    at = open_page("pages/workload.py")
    at.session_state["workload_records"] = records
    at.session_state["workload_settings"] = (RunSettings(), META, ["draft", "ngram"], [4], measured_costs)
    at.run()
    assert not at.exception
    return at


def test_a_speedup_above_tau_gets_no_go_and_busy_costs_qualify_the_go(tiny_default):
    # the n-gram lookup drafted nothing (τ 1.00) yet timed 1.30x on 5 prompts; the draft model 1.20x at τ 3.50
    records = [paired("ngram", (1.3, 1.3), f"q{i}", "qa") for i in range(5)]
    records += [paired("draft", (1.2, 1.2), f"q{i}", "qa") for i in range(5)]
    at = shown(records, costs())
    warnings = [text(w) for w in at.warning]
    assert not any(text(s).startswith("GO") for s in at.success)  # today's page: "GO: n-gram lookup, K = 4 ..."
    head = [w for w in warnings if w.startswith("No verdict yet.")]
    assert len(head) == 1 and "1.30× is above τ = 1.00, more than any pass can give" in head[0], warnings
    assert "a figure that cannot be true earns no GO" in head[0]
    assert not [c for c in at.code if c.language == "json"]  # no vLLM settings for it
    assert any(w.startswith("Some speedups are not to be trusted: all prompts: n-gram") for w in warnings), warnings
    # the draft model alone, on costs with a verify pass timed under a one-token step: GO, but in doubt, with why
    at = shown(records[5:], costs(verify=(0.87, 1.2, 1.3, 1.4)))
    warnings = [text(w) for w in at.warning]
    go = [w for w in warnings if w.startswith("GO, in doubt: ")]
    assert len(go) == 1 and "timed at 0.87 of a one-token step" in go[0], warnings
    assert not any(text(s).startswith("GO") for s in at.success)


def test_one_rule_for_a_tags_verdict_a_ratio_that_says_why_and_c_never_none(tiny_default):
    # 5 prose prompts, 1 code prompt: the code prompt's 1.43x gets no verdict, and its best line must agree
    records = [paired("draft", (0.9,), f"p{i}", "prose", plain_wall=0.07 * (1 + i)) for i in range(5)]
    records += [paired("ngram", (0.8,), f"p{i}", "prose", plain_wall=0.07 * (1 + i)) for i in range(5)]
    records += [paired("draft", (1.43,), "c0", "code"), paired("ngram", (0.95,), "c0", "code")]
    at = shown(records, None)
    said = [text(e) for e in [*at.success, *at.warning, *at.info]]
    code_verdict = [v for v in said if "for prompts tagged **code**" in v]
    assert len(code_verdict) == 1 and code_verdict[0].startswith("No verdict yet"), said
    best = next(text(m) for m in at.markdown if text(m).startswith("- Best for prompts tagged 'code'"))
    assert "1.43x" in best
    assert "beats plain decoding" not in best.replace("not shown to beat plain decoding", "")  # today: "it beats"
    assert "too few for a go / no-go" in best
    # prompts of different speeds: the mean tokens/s are not the speedup's ratio, and a caption says why
    captions = [text(c) for c in at.caption]
    assert any(c.startswith("Why a speedup is not the ratio of the tokens/s beside it") for c in captions), captions
    # the ranking's c: 0 for the lookup, as its caption says; for the draft model no costs were measured: said so
    ranked = next(d.value for d in at.dataframe if "setting" in d.value.columns)
    c = dict(zip(ranked["setting"], ranked["c"]))
    assert c["n-gram lookup (prompt lookup), K = 4"] == "0"
    assert c["draft model, K = 4"] == "not measured"
    assert "None" not in map(str, ranked["c"])
    # costs that cannot be true: the draft model's c is dropped, and the page says so and why
    at = shown(records, costs(verify=(0.87, 1.2, 1.3, 1.4)))
    ranked = next(d.value for d in at.dataframe if "setting" in d.value.columns)
    c = dict(zip(ranked["setting"], ranked["c"]))
    assert c["n-gram lookup (prompt lookup), K = 4"] == "0" and c["draft model, K = 4"] == "dropped: busy timings"
    assert any(
        text(m).startswith("c is dropped for draft model, K = 4: the step costs timed just before the workload cannot")
        for m in at.caption
    )
