"""Calculator charts: marks, encodings and the numbers in their data (via to_dict())."""

import pytest

from specviz.core.roofline import HARDWARE, MODELS, LoadSettings, break_even_batch, load_curve
from specviz.core.theory import VerifyCost, best_k, compare_positional, expected_tokens, speedup
from specviz.viz import theory_charts as charts


def layers(spec):
    return spec["layer"] if "layer" in spec else [spec]


def rows(spec, layer):
    """The data rows a (layer of a) chart draws."""
    name = layer.get("data", spec.get("data", {})).get("name")
    return spec["datasets"][name]


def test_speedup_vs_k_chart_lines_and_values():
    frame = charts.speedup_frame(charts.curve_alphas(0.8), 0.05, VerifyCost.linear(0.02), chosen_alpha=0.8)
    spec = charts.speedup_vs_k_chart(frame, current_k=4).to_dict()
    lines = layers(spec)[0]
    assert lines["mark"]["type"] == "line"
    assert lines["encoding"]["x"] == {**lines["encoding"]["x"], "field": "k", "type": "ordinal"}
    assert lines["encoding"]["y"]["field"] == "speedup"
    assert lines["encoding"]["y"]["type"] == "quantitative"
    assert lines["encoding"]["tooltip"]
    assert spec["title"] == "Speedup vs K"
    data = {(r["alpha"], r["k"]): r for r in rows(spec, lines)}
    assert {a for a, _ in data} == {0.5, 0.7, 0.8, 0.9}
    assert data[(0.8, 4)]["speedup"] == pytest.approx(speedup(0.8, 4, 0.05, 1.08))
    assert data[(0.8, 4)]["speedup_ideal"] == pytest.approx(speedup(0.8, 4, 0.05))
    assert data[(0.8, 4)]["alpha_label"] == "α = 0.8 (chosen)"
    assert [layer["mark"]["type"] for layer in layers(spec)] == ["line", "rule", "rule"]


def test_heatmap_marks_best_k_per_alpha_and_the_current_point():
    frame = charts.heatmap_frame(0.05)
    spec = charts.heatmap_chart(frame, alpha=0.8, k=4).to_dict()
    cells, best, here = layers(spec)
    assert cells["mark"]["type"] == "rect"
    assert best["mark"]["type"] == "point"
    assert here["mark"]["type"] == "point"
    assert cells["encoding"]["color"]["field"] == "speedup"
    assert cells["encoding"]["x"]["field"] == "k"
    data = rows(spec, cells)
    assert len(data) == len(charts.HEATMAP_ALPHAS) * 16
    best_cells = {r["alpha"]: r["k"] for r in data if r["best"]}
    assert best_cells[0.8] == best_k(0.8, 0.05)[0] == 8
    assert all(best_cells[a] == best_k(a, 0.05)[0] for a in charts.HEATMAP_ALPHAS)
    assert rows(spec, here) == [{"alpha": 0.8, "k": 4, "label": "you: α≈0.8, K=4"}]


def test_expected_tokens_chart_has_the_ceiling():
    spec = charts.expected_tokens_chart(0.8, 16, current_k=4).to_dict()
    lines = layers(spec)[0]
    assert lines["mark"]["type"] == "line"
    assert lines["encoding"]["y"]["field"] == "tokens"
    data = rows(spec, lines)
    e4 = [r["tokens"] for r in data if r["k"] == 4 and r["series"].startswith("E")][0]
    assert e4 == pytest.approx(expected_tokens(0.8, 4))
    assert [r["tokens"] for r in data if r["k"] == 4 and r["series"].startswith("K + 1")] == [5.0]
    assert "5.00" in spec["title"]  # 1 / (1 − 0.8)


def test_positional_chart():
    cmp = compare_positional([0.9, 0.8, 0.7])
    spec = charts.positional_chart(cmp).to_dict()
    assert spec["mark"]["type"] == "bar"
    assert spec["encoding"]["y"]["field"] == "passes"
    data = [r for r in rows(spec, spec) if r["series"] == "per-position rates"]
    assert [round(r["passes"], 6) for r in data] == [0.9, 0.72, 0.504]
    assert f"{cmp.expected_tokens:.3f}" in spec["title"]


def test_load_chart():
    s = LoadSettings(
        HARDWARE["A100 80GB"], MODELS["70B (Llama-3-70B shape)"], MODELS["1B (Llama-3.2-1B shape)"], 0.8, 4
    )
    points = load_curve(s)
    b = break_even_batch(s)
    spec = charts.load_chart(points, b, "A100 80GB").to_dict()
    lines, rule = layers(spec)
    assert lines["mark"]["type"] == "line"
    assert lines["encoding"]["x"]["scale"]["type"] == "log"
    assert rule["mark"]["type"] == "rule"
    assert rows(spec, rule) == [{"batch": b}]
    data = rows(spec, lines)
    assert {r["series"] for r in data} == {"plain decoding", "speculative"}
    first = [r for r in data if r["batch"] == 1 and r["series"] == "speculative"][0]
    assert first["tokens_s"] == pytest.approx(points[0].spec_tokens_s)
    assert str(b) in spec["title"]


def test_measured_costs_chart():
    spec = charts.measured_costs_chart([1.1, 1.3], 0.4).to_dict()
    data = rows(spec, spec)
    assert {(r["k"], r["series"], round(r["cost"], 6)) for r in data} >= {
        (2, "measured v(K)", 1.3),
        (2, "K·c (drafting)", 0.8),
    }
    assert spec["mark"]["type"] == "line"
