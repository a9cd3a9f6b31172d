"""Head trees in the CLI (run, measure, bench --tree-methods) and as benchmark lanes, on the bundled pair's heads."""

import json

import pytest

from specviz import methods
from specviz.cli import main
from specviz.core.settings import RunSettings
from specviz.core.trace_json import trace_from_json
from specviz.engine.loading.models import load_pair
from specviz.measure.bench import results_table, run_bench


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("method", methods.BRANCHING)
def test_run_with_a_tree_drafts_the_heads_tree_and_says_so(capsys, method):
    argv = ["run", "--prompt", "def add(", "--method", method, "--tree", "2,2,1,1", "--max-new-tokens", "12"]
    code, out, err = run_cli(capsys, *argv)
    assert code == 0, err
    assert f"{method} tree 2,2,1,1 (14 nodes, depth 4), greedy: 12 tokens" in out
    code, out, err = run_cli(capsys, *argv, "--json")
    trace = trace_from_json(out)
    assert trace.settings.method == method and trace.settings.tree == (2, 2, 1, 1) and trace.settings.k == 4
    assert any(r.is_tree for r in trace.rounds)


def test_a_medusa_tree_deeper_than_its_heads_is_one_clear_line(capsys):
    code, _, err = run_cli(capsys, "run", "--prompt", "x", "--method", methods.MEDUSA, "--tree", "2,1,1,1,1")
    assert code == 2
    assert "5 levels deep, but the Medusa heads are 4" in err
    assert "Traceback" not in err


def test_measure_runs_head_trees_against_plain(capsys, tmp_path):
    prompts = tmp_path / "w.jsonl"
    prompts.write_text('{"prompt": "def add(a, b):", "tag": "code"}\n')
    code, out, err = run_cli(
        capsys, "measure", str(prompts), "--method", "eagle,medusa", "--tree", "2,1", "--max-new-tokens", "8",
        "--json", str(tmp_path / "r.json"),
    )  # fmt: skip
    assert code == 0, err
    doc = json.loads((tmp_path / "r.json").read_text())
    assert {r["method"] for r in doc["runs"]} >= {methods.EAGLE, methods.MEDUSA}


def test_measure_with_a_tree_refuses_a_method_that_drafts_no_tree(capsys, tmp_path):
    prompts = tmp_path / "w.jsonl"
    prompts.write_text('{"prompt": "def add(a, b):", "tag": "code"}\n')
    code, _, err = run_cli(capsys, "measure", str(prompts), "--method", "eagle,ngram", "--tree", "2,1")
    assert code == 2
    assert "--method takes any of tree, eagle, eagle3, medusa" in err


@pytest.mark.slow
def test_bench_runs_each_tree_shape_for_each_tree_method():
    pair = load_pair(device="cpu", draft=None)
    doc = run_bench(pair, ["def add(a, b):"], [4], RunSettings(max_new_tokens=8), lanes=("plain", "eagle"),
                    trees=[(2, 2, 1, 1)], tree_methods=(methods.EAGLE, methods.MEDUSA))  # fmt: skip
    trees = {r["method"]: r for r in doc["results"] if r.get("tree")}
    assert set(trees) == {methods.EAGLE, methods.MEDUSA}
    assert trees[methods.EAGLE]["nodes"] == 14 and trees[methods.EAGLE]["k"] == 4
    assert trees[methods.EAGLE]["predicted_speedup"] is None  # the chain cost model does not describe trees
    chain = [r for r in doc["results"] if r["method"] == methods.EAGLE and not r.get("tree")]
    assert [r["k"] for r in chain] == [4]  # the chain lane stays a chain
    assert all(r["identical_to_plain"] for r in doc["results"])
    assert doc["settings"]["tree_methods"] == [methods.EAGLE, methods.MEDUSA]
    table = results_table(doc)
    assert "eagle tree 2,2,1,1 (14 nodes)" in table and "medusa tree 2,2,1,1 (14 nodes)" in table


def test_bench_refuses_a_tree_method_that_drafts_no_tree(capsys):
    code, _, err = run_cli(capsys, "bench", "--lanes", "plain", "--tree", "2,1", "--tree-methods", "ngram")
    assert code == 2
    assert "--tree-methods takes any of tree, eagle, eagle3, medusa" in err


def test_a_head_tree_gets_no_chain_prediction():
    """The chain cost model (drafts per round x c + v(K)) does not describe a tree (one head pass per depth, every
    node verified): a measured tree gets no prediction, its chain does."""
    from specviz.core.record import RunRecord
    from specviz.engine.costs import MeasuredCosts
    from specviz.engine.decode import generate
    from specviz.measure.predict import predict

    pair = load_pair(device="cpu", draft=None)
    costs = MeasuredCosts("t", "d", "cpu", "float32", 20, 5, {methods.EAGLE: 0.002}, 0.01, (0.011, 0.012, 0.013, 0.014))

    def record(**tree):
        settings = RunSettings(method=methods.EAGLE, k=4, max_new_tokens=8, **tree)
        return RunRecord.of_trace(generate(pair, "def add(a, b):", settings), "code", ())

    assert predict([record()], costs) is not None
    assert predict([record(tree=(2, 2, 1, 1))], costs) is None
