"""The roofline beside a load sweep (measure/sweep_roofline.py): this machine's two numbers measured, the pair's shapes
read off the models, the prediction per level from the α each server reported, and the words that compare them."""

from __future__ import annotations

import json

import pytest

from specviz.core.roofline import Hardware, LoadSettings, ModelSpec, load_point
from specviz.engine.loading.models import ASSETS
from specviz.measure import sweep_roofline

RECORDED = json.loads((ASSETS / "bench" / "vllm-cpu-load-draft-k4-code.json").read_text())
HARDWARE = Hardware("test", 10.0, 0.1, 16.0)
TARGET = ModelSpec("target", 0.010, 10, 4, 64, 4)
DRAFT = ModelSpec("draft", 0.0029, 1, 4, 64, 4)


def test_measured_hardware_is_positive_and_names_the_load_it_was_measured_under():
    hw = sweep_roofline.measured_hardware(repeats=1)
    assert 0.1 < hw.bandwidth_gb_s < 10_000  # GB/s: any machine from a phone to an HBM GPU
    assert 1e-4 < hw.peak_tflops < 10_000
    assert hw.memory_gb > 1
    assert "measured at load" in hw.name


def test_model_spec_counts_the_loaded_models_parameters_and_shapes(load):
    pair = load("llama-target", "llama-truncated")
    spec = sweep_roofline.model_spec(pair.target, "target")
    config = pair.target.config
    assert spec.params_b * 1e9 == sum(p.numel() for p in pair.target.parameters())
    assert spec.layers == config.num_hidden_layers
    assert spec.kv_heads == config.num_key_value_heads
    assert spec.head_dim == config.hidden_size // config.num_attention_heads
    assert spec.bytes_per_param == 4  # float32


def test_roofline_rows_give_each_speculative_level_the_load_point_of_its_own_alpha_and_k():
    rows = sweep_roofline.roofline_rows(RECORDED, HARDWARE, TARGET, DRAFT)
    server = RECORDED["servers"][0]["server"]
    assert [r["concurrency"] for r in rows] == [level["concurrency"] for level in RECORDED["levels"]]
    assert {r["server"] for r in rows} == {server}  # the baseline reports no α: no row
    for row, level in zip(rows, RECORDED["levels"]):
        alpha = next(s["alpha"] for s in level["summaries"] if s["server"] == server)
        context = RECORDED["settings"]["max_new_tokens"] + int(
            sum(p["chars"] for p in RECORDED["prompts"]) / len(RECORDED["prompts"]) / 4
        )
        expected = load_point(LoadSettings(HARDWARE, TARGET, DRAFT, alpha, 4, context), level["concurrency"])
        assert row["alpha"] == alpha and row["k"] == 4
        assert row["predicted"] == pytest.approx(expected.gain)


def test_the_words_quote_every_level_measured_and_predicted():
    rows = sweep_roofline.roofline_rows(RECORDED, HARDWARE, TARGET, DRAFT)
    words = sweep_roofline.difference_words(RECORDED, rows)
    for row, level in zip(rows, RECORDED["levels"]):
        measured = level["speedups"][0]["latency_speedup"]
        assert (
            f"at {row['concurrency']} measured {measured:.2f}× against the roofline's {row['predicted']:.2f}×" in words
        )
    assert "fixed cost" in words


def test_no_alpha_means_no_prediction_and_says_so():
    doc = {**RECORDED, "levels": [
        {**level, "summaries": [{**s, "alpha": None} for s in level["summaries"]]} for level in RECORDED["levels"]
    ]}  # fmt: skip
    assert sweep_roofline.roofline_rows(doc, HARDWARE, TARGET, DRAFT) == []
    assert sweep_roofline.difference_words(doc, []).startswith("No level has both")
