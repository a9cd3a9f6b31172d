"""Lab charts: marks, encodings, colours and data values (via to_dict())."""

import pytest

from specviz.core import lab
from specviz.viz import lab_charts as charts
from specviz.viz.palette import ORIGIN_COLORS


def data_of(spec, layer=None):
    layer = layer or spec
    return spec["datasets"][layer.get("data", spec.get("data"))["name"]]


def test_flow_chart_stacks_accepted_and_correction_to_p():
    spec = charts.flow_chart(lab.two_token_flow(0.7, 0.9)).to_dict()
    bars, ticks = spec["layer"]
    assert bars["mark"]["type"] == "bar"
    assert ticks["mark"]["type"] == "tick"
    assert bars["encoding"]["y"]["stack"] == "zero"
    assert bars["encoding"]["tooltip"]
    assert bars["encoding"]["color"]["scale"]["range"] == [ORIGIN_COLORS["accepted"], ORIGIN_COLORS["correction"]]
    mass = {(r["token"], r["source"]): r["mass"] for r in data_of(spec, bars)}
    assert mass[("A", "accepted draft")] == pytest.approx(0.7)
    assert mass[("A", "correction (residual)")] == pytest.approx(0.0)
    assert mass[("B", "accepted draft")] == pytest.approx(0.1)
    assert mass[("B", "correction (residual)")] == pytest.approx(0.2)
    assert [r["p"] for r in data_of(spec, ticks)] == pytest.approx([0.7, 0.3])


def test_shop_chart_compares_exact_and_samples():
    p, q = lab.shop_models()
    exp = lab.shop_experiment(p, q, samples=2000, seed=1)
    spec = charts.shop_chart(exp, top=5).to_dict()
    assert spec["mark"]["type"] == "bar"
    assert spec["encoding"]["xOffset"]["field"] == "series"
    data = data_of(spec)
    assert len(data) == 15
    top = [r for r in data if r["rank"] == 0 and r["series"] == "exact target p"][0]
    assert top["prob"] == pytest.approx(float(exp.exact_target.max()))
    assert top["exact_spec"] == pytest.approx(top["prob"], abs=1e-12)


def test_bug_chart_and_variant_chart():
    p, q = lab.shop_models(lab.POOR_DRAFT)
    checks = lab.bug_checks(p, q, samples=3000)
    frame = charts.bug_frame(checks)
    spec = charts.bug_chart(frame).to_dict()
    assert spec["mark"]["type"] == "bar"
    assert spec["encoding"]["x"]["field"] == "tv"
    verdicts = {r["key"]: r["verdict"] for r in data_of(spec)}
    assert verdicts["exact"] == "exact"
    assert all(v == "bias detected" for k, v in verdicts.items() if k != "exact")
    target = lab.as_vector(lab.target_distribution(p, (), 3), 4, 3).tolist()
    greedy = next(c for c in checks if c.variant.key == "greedy_soft_q")
    vspec = charts.variant_chart(lab.sequence_labels(3), target, greedy.exact.tolist(), "greedy", top=4).to_dict()
    rows = data_of(vspec)
    assert len(rows) == 8
    assert vspec["mark"]["type"] == "bar"
    gaps = [abs(r["gap"]) for r in rows if r["series"] == "greedy"]
    assert gaps == sorted(gaps, reverse=True)
    assert gaps[0] == pytest.approx(float((greedy.exact - torch_tensor(target)).abs().max()))


def torch_tensor(values):
    import torch

    return torch.tensor(values, dtype=torch.float64)


def test_real_pair_chart():
    rows = [{"tokens": "'ab'", "plain": 0.5, "speculative": 0.4}, {"tokens": "'cd'", "plain": 0.1, "speculative": 0.2}]
    spec = charts.real_pair_chart(rows, "title").to_dict()
    assert spec["mark"]["type"] == "bar"
    assert spec["title"] == "title"
    assert {(r["tokens"], r["series"], r["freq"]) for r in data_of(spec)} == {
        ("'ab'", "plain", 0.5),
        ("'ab'", "speculative", 0.4),
        ("'cd'", "plain", 0.1),
        ("'cd'", "speculative", 0.2),
    }


def test_the_loaded_pairs_test_says_what_it_could_see():
    from specviz.core.chisq import detectable_tv

    cut = charts.power_note(70, 300, 10, stopped_early=True)
    tv = detectable_tv(70, 10, charts.REAL_PAIR_LEVEL, charts.REAL_PAIR_POWER)
    assert cut.startswith(
        f"The time budget ran out after 70 of 300 samples each way: at this size the test detects only TV ≥ {tv:.2f}"
    )
    full = charts.power_note(1000, 1000, 10, stopped_early=False)
    assert full.startswith("1000 samples each way: at this size the test detects only TV ≥ ")
    assert float(full.split("≥ ")[1].split(" ")[0]) < tv  # more samples, a sharper test
    assert "too few" in charts.power_note(5, 300, 0, stopped_early=True)


def test_the_sampler_charts_tooltips_write_p_values_as_the_page_does():
    p, q = lab.shop_models(lab.POOR_DRAFT)
    frame = charts.bug_frame(lab.bug_checks(p, q, k=2, samples=500, length=3, seed=0))
    spec = charts.bug_chart(frame).to_dict()
    assert {"calculate": charts.P_TEXT, "as": "p_text"} in spec["transform"]
    assert {"field": "p_text", "type": "nominal", "title": "χ² test"} in spec["encoding"]["tooltip"]
    assert not [t for t in spec["encoding"]["tooltip"] if isinstance(t, dict) and t.get("field") == "p_value"]
    assert "'p < 0.001'" in charts.P_TEXT and "0.1 ? '.2f' : '.2g'" in charts.P_TEXT  # format_p's two ranges
