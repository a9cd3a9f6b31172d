"""The workload page's Spec-Bench preset (issue #38): chosen from the sample list, sampled per category (only its own
rows), measured, and shown per category beside Spec-Bench's published table, with a row too long for the pair's
context reported by its question id and the rest measured."""

from app_helpers import click, open_page, text


def number_input(at, label):
    return next(n for n in at.number_input if n.label == label)


def test_the_spec_bench_preset_is_measured_per_category_beside_the_published_table(tiny_default):
    at = open_page("pages/workload.py", 240)
    samples = at.multiselect[0]
    assert "spec-bench" in samples.options or "Spec-Bench" in samples.options
    samples.set_value(["code", "spec-bench"]).run()
    assert not at.exception
    number_input(at, "Spec-Bench rows per category").set_value(1).run()
    at.multiselect(key="spec_bench_categories").set_value(["qa", "rag"]).run()
    captions = [text(c) for c in at.caption]
    assert any("left out" in c.lower() and "translation" in c and "summarization" in c for c in captions)
    # code's 20 rows are untouched; one row each of qa and rag are drawn
    assert any(c.startswith("22 prompt(s) by tag: code (20), qa (1), rag (1)") for c in captions), captions
    samples.set_value(["spec-bench"]).run()
    at.sidebar.slider(key="max_new_tokens").set_value(4).run()
    number_input(at, "Timing repeats per prompt").set_value(1).run()
    at = click(at, "▶ Measure")
    assert not at.exception
    assert not at.error
    warnings = [text(w) for w in at.warning]
    assert any(w.startswith("question 4") or w.startswith("question 5") for w in warnings), warnings  # the RAG row
    assert any("context of 256 tokens" in w for w in warnings)
    assert {r.run.tag for r in at.session_state["workload_records"]} == {"qa"}  # the rest measured
    assert any(s.value == "Spec-Bench: per category, beside the published table" for s in at.subheader)
    assert any("Vicuna-7B-v1.3" in text(m) and "3090" in text(m) and "2025-04-22" in text(m) for m in at.markdown)
    frames = [d.value for d in at.dataframe]
    published = next(f for f in frames if "PLD" in list(f.get("method", [])))
    assert published.set_index("method").loc["PLD", "summarization"] == "2.46x"
    measured = next(f for f in frames if "category" in f.columns and "setting" in f.columns)
    assert list(measured["category"]) == ["qa"] and measured["rank"].iloc[0] == "★ 1"
    for frame in frames:  # a missing figure is a dash, never None
        assert not frame.astype(str).isin(["None", "nan"]).any().any(), frame
