"""--tree dynamic:BUDGET,DEPTH,TOPK in the CLI (run, measure, bench) and dynamic-tree lanes in the benchmark."""

import json

import pytest
from test_tree_cli import models, run_cli

from specviz.core.dyntree import DynamicTree
from specviz.core.settings import RunSettings
from specviz.core.trace_json import trace_from_json
from specviz.measure.bench import results_table, run_bench


def test_run_dynamic_tree_prints_it_and_its_trace_keeps_it(model_dirs, capsys):
    argv = ["run", "--prompt", "def add", *models(model_dirs), "--tree", "dynamic:8,3,2", "--max-new-tokens", "12"]
    code, out, err = run_cli(capsys, *argv)
    assert code == 0, err
    assert "tree dynamic:8,3,2 (8 nodes kept, depth 3), greedy: 12 tokens" in out
    code, out, err = run_cli(capsys, *argv, "--json")
    trace = trace_from_json(out)
    assert trace.settings.dynamic == DynamicTree(8, 3, 2) and trace.settings.k == 3
    assert all(len(r.nodes) <= 8 for r in trace.rounds)
    assert trace.rounds[0].scored  # every candidate, kept or pruned


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--tree", "dynamic:8,3"], "dynamic:BUDGET,DEPTH,TOPK"),
        (["--tree", "dynamic:300,3,2"], "budget (nodes kept) must be a whole number from 1 to 256"),
        (["--tree", "dynamic:8,0,2"], "depth (levels) must be"),
        (["--tree", "dynamic:8,3,0"], "top-k"),
        (["--tree", "dynamic:8,3,2", "--plain"], "drop --tree"),
    ],
)
def test_run_bad_dynamic_tree_is_one_clear_line(model_dirs, capsys, extra, message):
    code, _, err = run_cli(capsys, "run", "--prompt", "x", *models(model_dirs), *extra)
    assert code == 2
    assert message in err
    assert "Traceback" not in err


def test_measure_runs_the_dynamic_tree(model_dirs, capsys, tmp_path):
    prompts = tmp_path / "w.jsonl"
    prompts.write_text('{"prompt": "def add", "tag": "code"}\n')
    code, out, err = run_cli(
        capsys, "measure", str(prompts), *models(model_dirs), "--tree", "dynamic:6,3,2", "--max-new-tokens", "8",
        "--json", str(tmp_path / "r.json"),
    )  # fmt: skip
    assert code == 0, err
    doc = json.loads((tmp_path / "r.json").read_text())
    assert {r["method"] for r in doc["runs"]} >= {"tree"}


def test_bench_has_a_dynamic_tree_row_beside_the_static_one(load):
    pair = load("llama-target", "llama-truncated")
    doc = run_bench(pair, ["def add(a, b):"], [2], RunSettings(max_new_tokens=8), lanes=("plain", "draft"),
                    trees=[(2, 1), DynamicTree(4, 2, 2)])  # fmt: skip
    trees = {r["tree"]: r for r in doc["results"] if r["method"] == "tree"}
    assert set(trees) == {"2,1", "dynamic:4,2,2"}
    assert trees["dynamic:4,2,2"]["nodes"] == 4 and trees["dynamic:4,2,2"]["k"] == 2
    assert all(r["identical_to_plain"] for r in doc["results"])
    assert doc["settings"]["trees"] == [[2, 1], "dynamic:4,2,2"]
    assert "tree dynamic:4,2,2 (4 nodes)" in results_table(doc)
