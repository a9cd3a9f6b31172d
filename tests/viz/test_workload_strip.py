"""The workload page's step strip: one cell per verify step of each run, coloured by the drafts it accepted; the
speedup columns go when no speedup was measured."""

from specviz.core.record import RunRecord
from specviz.measure.summary import summarize
from specviz.measure.workload import PairedRun
from specviz.viz import workload_charts as charts


def served(prompt, drafted, accepted, committed):
    judged = tuple(a + (a < d) for d, a in zip(drafted, accepted))
    return RunRecord(
        "vllm", "draft", 4, prompt, "", tuple(range(sum(committed))), committed, drafted, accepted, judged, (), 0.1
    )


def test_strip_has_a_cell_per_verify_step_and_skips_passes_without_drafts():
    # vLLM's prefill pass (drafted 0) commits one token, then three verify steps accepting 4, 0 and 2
    first = served("def add(a, b):", (0, 4, 4, 4), (0, 4, 0, 2), (1, 5, 1, 3))
    totals_only = RunRecord("vllm", "draft", 4, "x", "", (), (), None, None, None, (), 0.1)
    frame = charts.step_strip_frame([PairedRun((first,)), PairedRun((totals_only,))])
    assert list(frame["step"]) == [2, 3, 4]  # pass 1 (the prefill) drafted nothing: no cell
    assert list(frame["accepted"]) == [4, 0, 2]
    assert list(frame["share"]) == [1.0, 0.0, 0.5]
    assert set(frame["run"]) == {"1. def add(a, b): · draft model, K = 4"}  # the totals-only run has no steps to show
    spec = charts.step_strip_chart([first]).to_dict()
    assert spec["mark"]["type"] == "rect"
    assert spec["title"].startswith("Accepted drafts at each verify step")
    enc = spec["encoding"]
    assert enc["x"]["field"] == "step"
    assert enc["y"]["field"] == "run"
    assert enc["color"]["field"] == "accepted"
    assert enc["color"]["scale"]["domain"] == [0, 4]
    assert {t["field"] for t in enc["tooltip"]} >= {"accepted", "drafted", "share"}


def test_one_strip_per_prompt_and_method_each_naming_its_method():
    # three prompts, each run by two methods, in the order a workload runs them: every prompt's first method first
    records = [
        PairedRun((RunRecord("specviz", m, 4, p, "", (1, 2), (1, 1), (4, 4), (2, 1), (3, 2), (), 0.1),))
        for m in ("draft", "ngram")
        for p in ("def add(a, b):\n    return", "class Stack:", "import os")
    ]
    frame = charts.step_strip_frame(records)
    strips = list(dict.fromkeys(frame["run"]))
    assert len(strips) == 6  # 3 prompts × 2 methods, not one unnamed strip per run
    assert strips == [
        "1. def add(a, b): return · draft model, K = 4",
        "1. def add(a, b): return · n-gram lookup (prompt lookup), K = 4",
        "2. class Stack: · draft model, K = 4",
        "2. class Stack: · n-gram lookup (prompt lookup), K = 4",
        "3. import os · draft model, K = 4",
        "3. import os · n-gram lookup (prompt lookup), K = 4",
    ]  # a prompt's strips side by side, numbered by prompt
    long = RunRecord("specviz", "draft", 4, "x" * 80, "", (1,), (1,), (4,), (1,), (2,), (), 0.1)
    assert charts.strip_label(7, long) == f"7. {'x' * 27}… · draft model, K = 4"


def test_frames_without_a_baseline_drop_the_speedup_columns():
    results = [PairedRun((served(f"p{i}", (0, 4), (0, 3), (1, 4)),)) for i in range(2)]
    per_prompt = charts.per_prompt_frame(results, speedup=False)
    assert "speedup" not in per_prompt
    assert "plain_tokens_per_s" not in per_prompt
    assert list(per_prompt["source"]) == ["vllm", "vllm"]
    summary = charts.summary_frame(summarize(results), speedup=False)
    assert not {"speedup", "speedup 95% CI", "predicted_speedup", "plain_tokens_per_s"} & set(summary.columns)
    assert "source" in summary
    assert "alpha 95% CI" in summary
    assert "speedup" in charts.per_prompt_frame(results)  # kept by default (in-process runs)


CHATML = "<|im_start|>system\nYou are a helpful AI assistant named SmolLM<|im_end|>\n<|im_start|>user\n{}<|im_end|>\n"


def test_an_instruct_pairs_prompts_are_named_by_the_users_message_not_the_templates_system_turn():
    from specviz.viz.text import user_message

    poem, email = CHATML.format("Write a poem about rain.") + "<|im_start|>assistant\n", CHATML.format("Email Bo.")
    assert user_message(poem) == "Write a poem about rain." and user_message("def add(a, b):") == "def add(a, b):"
    llama3 = "<|start_header_id|>user<|end_header_id|>\n\nHi there<|eot_id|><|start_header_id|>assistant"
    assert user_message(llama3) == "Hi there"
    records = [PairedRun((served(p, (4, 4), (2, 1), (3, 2)),)) for p in (poem, email)]
    assert set(charts.step_strip_frame(records)["run"]) == {
        "1. Write a poem about rain. · draft model, K = 4",
        "2. Email Bo. · draft model, K = 4",
    }
    assert list(charts.per_prompt_frame(records, speedup=False)["prompt"]) == ["Write a poem about rain.", "Email Bo."]


def test_the_speedup_and_class_charts_give_each_method_a_row_and_keep_their_legend_below():
    """Both drew empty at 1280 px: long method names on end took the speedup plot's height, and the class chart's
    legend beside it took a half column's width."""
    from specviz.viz.layout import BAND_ROW

    def run(method: str, prompt: str, wall_s: float) -> RunRecord:
        return RunRecord("specviz", method, 4, prompt, "", (1, 2, 3), (3,), (4,), (2,), (3,), (wall_s,), wall_s)

    records = [
        PairedRun((run(m, p, 0.1),), (run("plain", p, 0.2),))
        for p in ("def f():", "class A:")
        for m in ("draft", "ngram", "quantized")
    ]
    speedup = charts.speedup_chart(records, {}).to_dict()
    bars = next(layer for layer in speedup["layer"] if layer["mark"]["type"] == "bar")
    assert bars["encoding"]["y"]["field"] == "setting" and bars["encoding"]["x"]["field"] == "speedup"
    assert bars["encoding"]["color"]["legend"]["orient"] == "bottom"
    assert speedup["height"] >= 3 * BAND_ROW  # a row per method
    classes = charts.class_chart(records).to_dict()
    assert classes["encoding"]["color"]["legend"]["orient"] == "bottom"
