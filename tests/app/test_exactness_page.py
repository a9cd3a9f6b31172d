"""The exactness lab page: sliders move the numbers, every bug switch is flagged, the real pair runs."""

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from specviz.core import lab
from specviz.viz.tables import format_p

PAGE = str(Path(__file__).resolve().parents[2] / "pages" / "exactness.py")


def metrics(at) -> dict:
    return {m.label: m.value for m in at.metric}


@pytest.fixture
def page():
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    assert not at.exception
    assert not at.error
    return at


def test_two_token_example_reaches_p(page):
    m = metrics(page)
    assert (m["Final P(A)"], m["Final P(B)"], m["Rejected, then corrected"]) == ("0.700", "0.300", "0.200")
    assert page.info[0].value.startswith("Accepting a draft token")
    page.slider(key="p_a").set_value(0.35).run()
    page.slider(key="q_a").set_value(0.05).run()
    flow = lab.two_token_flow(0.35, 0.05)
    m = metrics(page)
    assert m["Final P(A)"] == "0.350"
    assert m["Final P(B)"] == "0.650"
    assert m["Rejected, then corrected"] == f"{flow.rejected_mass:.3f}"


def test_shop_model_numbers_follow_the_sliders(page):
    p, q = lab.shop_models()
    e = lab.shop_experiment(p, q, k=2, samples=20_000, length=3, seed=0)  # sequences of K + 1 events
    m = metrics(page)
    assert m["Largest gap, sampled"] == f"{e.largest_gap:.3f}"
    assert m["Verify passes per 64 events"] == f"{e.passes_per_64:.2f}"
    assert m["Draft acceptance fraction"] == f"{e.acceptance_fraction:.1%}"
    assert float(m["Largest gap, exact"]) < 1e-12
    page.slider(key="lab_k").set_value(4).run()
    page.select_slider(key="lab_samples").set_value(5_000).run()
    e2 = lab.shop_experiment(p, q, k=4, samples=5_000, length=5, seed=0)
    assert e2.passes_per_64 < e.passes_per_64  # K matters: longer rounds, fewer passes
    m = metrics(page)
    assert m["Verify passes per 64 events"] == f"{e2.passes_per_64:.2f}"
    assert m["χ², speculative vs exact p"] == format_p(e2.chi2_spec.p_value)
    page.selectbox(key="draft_preset").set_value("a poor draft").run()
    e3 = lab.shop_experiment(*lab.shop_models(lab.POOR_DRAFT), k=4, samples=5_000, length=5, seed=0)
    assert metrics(page)["Draft acceptance fraction"] == f"{e3.acceptance_fraction:.1%}"


def test_every_bug_switch_is_flagged(page):
    assert metrics(page)["Verdict"] == "exact"
    for variant in lab.VARIANTS[1:]:
        page.radio(key="bug").set_value(variant.label).run()
        m = metrics(page)
        assert m["Verdict"] == "bias detected", variant.key
        assert float(m["TV distance from p (exact)"]) > 0.1
        assert m["χ² (20,000 samples)"] == "p < 0.001"


def test_close_draft_shows_a_small_bias_as_not_detected(page):
    page.radio(key="bug_draft").set_value("the draft table above").run()
    page.radio(key="bug").set_value("skip the residual").run()
    m = metrics(page)
    assert m["Verdict"] == "biased, not detected at this N"
    assert 0 < float(m["TV distance from p (exact)"]) < 0.02


def test_real_pair_sampling_and_greedy_check(tiny_default, page):
    page.select_slider(key="real_samples").set_value(100).run()
    page.button(key="real_run").click().run()
    assert not page.exception
    assert not page.error
    m = metrics(page)
    assert m["Samples each way"] == "100"
    assert m["χ², plain vs speculative"].startswith("p ")
    power = next(c.value for c in page.caption if "at this size the test detects only TV ≥" in c.value)
    assert power.startswith("100 samples each way")
    page.button(key="greedy_run").click().run()
    assert not page.exception
    assert any(s.value.startswith("identical") for s in page.success)


@pytest.mark.slow  # the smallest time budget the page offers is 5 s, and this run spends it
def test_a_budget_cut_run_says_how_little_its_test_can_see(tiny_default, page):
    page.select_slider(key="real_samples").set_value(2000).run()
    page.slider(key="real_budget").set_value(5).run()
    page.button(key="real_run").click().run()
    assert not page.exception
    warning = next(w.value for w in page.warning if "time budget ran out" in w.value)
    done = int(metrics(page)["Samples each way"])
    assert done < 2000
    assert warning.startswith(f"The time budget ran out after {done} of 2000 samples each way: at this size the test")
    tv = float(warning.split("TV ≥ ")[1].split(" ")[0])
    assert tv > 0.1  # a few hundred samples catch only large differences


def test_real_pair_errors_are_messages(tiny_default, page):
    page.slider(key="real_temperature").set_value(0.1).run()
    page.text_input(key="real_prompt").set_value("   ").run()
    page.button(key="real_run").click().run()
    assert not page.exception
    assert "The prompt is empty" in page.error[0].value


def test_missing_pair_is_a_message(monkeypatch, tmp_path):
    monkeypatch.setenv("SPECVIZ_TARGET", str(tmp_path / "nothing-here"))
    page = AppTest.from_file(PAGE, default_timeout=60).run()
    page.button(key="greedy_run").click().run()
    assert not page.exception
    assert "Could not load the model pair" in page.error[0].value
    assert metrics(page)["Final P(A)"] == "0.700"


def test_medusas_typical_acceptance_is_a_switch_that_fails_with_its_reason(page):
    typical = lab.get_variant(lab.TYPICAL)
    page.radio(key="bug").set_value(typical.label).run()
    assert not page.exception
    m = metrics(page)
    assert m["Verdict"] == "bias detected" and m["χ² (20,000 samples)"] == "p < 0.001"
    said = " ".join(c.value for c in page.caption)
    assert f"{typical.label}: keep a draft whenever p(x) > min(ε, δ·e^(−H(p)))" in said
    assert "Not lossless by design" in said and "FasterDecoding/Medusa" in said
    page.radio(key="bug").set_value(lab.EXACT_VARIANT.label).run()
    assert metrics(page)["Verdict"] == "exact"  # the exact sampler passes the same check


def test_the_early_exit_switches_are_computed_exactly_and_only_the_mismatched_q_leaves_p(tiny_default, page):
    """On the tiny target (L = 3) at E = 2: with or without the final norm the exit is exact when the verifier is
    told the q its drafts came from; drafted raw but judged with the normed q, the first token's distribution moves
    (a random target's two exits differ, so the distance is not rounding)."""
    page.number_input(key="real_exit_layer").set_value(2).run()
    page.button(key="exit_run").click().run()
    assert not page.exception
    assert not page.error
    table = page.dataframe[-1].value.set_index("exit")
    verdicts = dict(zip(table.index, table["verdict"]))
    assert verdicts[lab.EXIT_EXACT.label] == verdicts[lab.EXIT_NO_NORM.label] == "exact"
    assert verdicts[lab.EXIT_MISMATCHED.label].startswith("not exact")
    assert table.loc[lab.EXIT_EXACT.label, "TV(first token, p)"] < 1e-12
    assert any("leave the final norm out" in c.value.lower() for c in page.caption)


def test_the_real_pair_sampler_runs_an_early_exit_side(tiny_default, page):
    page.radio(key="real_side").set_value(lab.EXIT_NO_NORM.label).run()
    page.number_input(key="real_exit_layer").set_value(2).run()
    page.select_slider(key="real_samples").set_value(50).run()
    page.button(key="real_run").click().run()
    assert not page.exception
    assert not page.error
    assert metrics(page)["Samples each way"] == "50"
    assert any(c.value == f"Speculative side: {lab.EXIT_NO_NORM.label}." for c in page.caption)


def test_an_exit_layer_the_target_lacks_is_a_message_in_the_lab(tiny_default, page):
    page.number_input(key="real_exit_layer").set_value(3).run()
    page.button(key="exit_run").click().run()
    assert not page.exception
    assert "this target has L = 3 layers" in page.error[0].value


def test_the_bug_table_holds_every_sentence_whole_in_a_static_table(page):
    """A past bug: the grid cut "What it does" and "Seen in" at their columns' width (the Medusa row's 371 and 241
    characters, the reports' links); a static table wraps them, with the grid's headers and number formats."""
    [table] = page.table
    shown = table.value
    assert list(shown.columns)[:3] == ["Sampler", "What it does", "Seen in"]
    assert list(shown["What it does"]) == [v.explanation for v in lab.VARIANTS]
    assert list(shown["Seen in"]) == ["" if v.key == "exact" else v.seen_in for v in lab.VARIANTS]
    row = shown.set_index("Sampler").loc["skip the residual"]
    tv = float(row["TV from p"])
    assert row["TV from p"] == f"{tv:.3g}" and row["χ² p-value"].startswith("p ")
    assert [d for d in page.dataframe if "what" in list(d.proto.column_order)] == []  # not also a grid
