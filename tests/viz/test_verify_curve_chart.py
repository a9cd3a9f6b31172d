"""The v(K) chart draws every target of a specviz.verify-curve document, and its sentence quotes their numbers."""

import json

from specviz.measure.verify_curve import curve_document
from specviz.ui.verify_curve import RECORDED
from specviz.viz.theory_charts import verify_curve_chart, verify_curve_frame, verify_curve_words

CURVE = {"dtype": "float32", "tokens_per_s": 10.0, "target_step_s": 0.1}


def test_both_targets_on_one_chart_beside_the_bandwidth_bound():
    curves = [
        {**CURVE, "pair": "pystdlib", "weight_bytes": 40_000_000, "verify_cost": [1.0 + k / 10 for k in range(16)]},
        {**CURVE, "pair": "smollm2", "weight_bytes": 538_000_000, "verify_cost": [1.0 + k / 100 for k in range(16)]},
    ]
    doc = curve_document(curves, 5.38, {})
    assert doc["targets"][1]["bound_tokens_per_s"] == 10.0  # 5.38 GB/s over 538 MB a step
    assert doc["targets"][1]["fraction_of_bound"] == 1.0
    frame = verify_curve_frame(doc)
    assert len(frame) == 32 and frame["k"].max() == 16
    spec = verify_curve_chart(doc).to_dict()
    assert "bandwidth 5.4 GB/s measured" in json.dumps(spec)
    words = verify_curve_words(doc)
    assert "smollm2 v(8) = 1.07 with 538 MB a step" in words and "100% of the 10 tokens/s" in words


def test_the_recorded_curve_holds_both_targets_at_every_k():
    doc = json.loads(RECORDED.read_text(encoding="utf-8"))
    assert doc["format"] == "specviz.verify-curve" and doc["bandwidth_gb_s"] > 0
    assert [t["pair"] for t in doc["targets"]] == ["pystdlib", "smollm2"]
    assert all(len(t["verify_cost"]) == 16 and t["weight_bytes"] > 0 for t in doc["targets"])
    assert doc["environment"]["cpu"] and doc["environment"]["cpu_capability"]
