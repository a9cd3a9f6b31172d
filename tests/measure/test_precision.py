"""The Precision control's answer comes from timing both precisions on this machine."""

from specviz.measure.precision import ROUND_K, PrecisionTiming, time_precisions, verdict


def test_both_precisions_are_timed_on_the_pair_in_use(load, model_dirs):
    from specviz.engine.loading.models import load_pair

    loaded = []

    def load_in(dtype):
        loaded.append(dtype)
        return load_pair(str(model_dirs["llama-target"]), str(model_dirs["llama-truncated"]), device="cpu", dtype=dtype)

    timings = time_precisions(load_in)
    assert loaded == ["float32", "bfloat16"]
    assert [t.dtype for t in timings] == loaded
    assert all(t.target_step_ms > 0 and t.round_ms > 0 for t in timings)


def test_the_verdict_names_the_faster_precision_and_the_cpu():
    text = verdict([PrecisionTiming("float32", 10.0, 30.0), PrecisionTiming("bfloat16", 6.0, 20.0)])
    assert "bfloat16 is 1.67x faster here" in text
    assert "10.0 ms in float32" in text
    assert f"a round of K = {ROUND_K} drafts" in text
    assert "On this machine (" in text
