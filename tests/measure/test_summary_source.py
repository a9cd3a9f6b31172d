"""The summary keeps runs of different engines apart: each row names its source, and the same method and K measured
by specviz and by a vLLM server are two rows (per tag and overall), never pooled."""

import csv
import io

import pytest

from specviz.core.record import RunRecord
from specviz.measure.recommend import recommend
from specviz.measure.summary import groups, results_csv, summarize
from specviz.measure.workload import PairedRun


def run(source, accepted, prompt="p", tag="code", wall=0.02):
    drafted = (4,) * len(accepted)
    committed = tuple(a + 1 for a in accepted)
    judged = tuple(min(a + 1, d) for a, d in zip(accepted, drafted))
    ends = tuple(wall * (i + 1) / len(committed) for i in range(len(committed)))
    return RunRecord(
        source,
        "draft",
        4,
        prompt,
        "",
        tuple(range(sum(committed))),
        committed,
        drafted,
        accepted,
        judged,
        ends,
        wall,
        tag=tag,
    )


def test_rows_are_grouped_by_source_and_keep_their_keys():
    results = [
        PairedRun((run("specviz", (4, 4), "a", "code"),)),
        PairedRun((run("specviz", (4, 4), "b", "prose"),)),
        PairedRun((run("vllm", (0, 0), "a", "code"),)),
    ]
    assert set(groups(results)) == {
        ("code", "specviz", "draft", 4),
        ("prose", "specviz", "draft", 4),
        ("all", "specviz", "draft", 4),
        ("code", "vllm", "draft", 4),
        ("all", "vllm", "draft", 4),
    }
    rows = summarize(results)
    assert [(r["tag"], r["source"]) for r in rows][:2] == [("all", "specviz"), ("all", "vllm")]  # overall first
    by = {(r["tag"], r["source"]): r for r in rows}
    assert by["all", "specviz"]["alpha"] == 1.0
    assert by["all", "specviz"]["prompts"] == 2
    assert by["all", "vllm"]["alpha"] == 0.0
    assert by["all", "vllm"]["prompts"] == 1  # not pooled with specviz's
    assert {"tag", "method", "k", "prompts", "alpha", "tau", "speedup"} <= rows[0].keys()  # the existing keys stay
    assert by["code", "vllm"]["tau"] == pytest.approx(1.0)


def test_csv_names_the_source_and_a_mixed_workload_still_gets_advice():
    results = [PairedRun((run("vllm", (2, 3), f"p{i}"),)) for i in range(5)]
    rows = list(csv.DictReader(io.StringIO(results_csv(results))))
    assert {r["source"] for r in rows} == {"vllm"}
    assert rows[0]["speedup"] == ""
    advice = recommend(results + [PairedRun((run("specviz", (4,)),))], None, 0.0)
    assert advice.go is None
    assert advice.method == "draft"
    assert advice.k == 4
