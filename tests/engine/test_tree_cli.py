"""--tree in the CLI (run, measure, bench) and tree lanes in the benchmark."""

import json

import pytest

from specviz.cli import main
from specviz.core.settings import RunSettings
from specviz.core.trace_json import trace_from_json
from specviz.measure.bench import results_table, run_bench


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def models(model_dirs):
    return ["--target", str(model_dirs["llama-target"]), "--draft", str(model_dirs["llama-truncated"])]


def test_run_tree_prints_its_shape_and_a_version_2_trace(model_dirs, capsys):
    argv = ["run", "--prompt", "def add", *models(model_dirs), "--tree", "3,2,1", "--max-new-tokens", "12"]
    code, out, err = run_cli(capsys, *argv)
    assert code == 0, err
    assert "tree 3,2,1 (15 nodes, depth 3), greedy: 12 tokens" in out
    code, out, err = run_cli(capsys, *argv, "--json")
    trace = trace_from_json(out)
    assert json.loads(out)["version"] == 2
    assert trace.settings.tree == (3, 2, 1)
    assert trace.settings.k == 3
    assert all(len(r.nodes) <= 15 for r in trace.rounds)


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--tree", "2,0"], "depth 2 has 0"),
        (["--tree", "2,x"], "--tree takes whole numbers"),
        (["--tree", "2,1", "--tree", "3"], "one --tree shape"),
        (["--tree", "2,1", "--plain"], "drop --tree"),
        (["--tree", "16,16"], "272 nodes"),
    ],
)
def test_run_bad_tree_is_one_clear_line(model_dirs, capsys, extra, message):
    code, _, err = run_cli(capsys, "run", "--prompt", "x", *models(model_dirs), *extra)
    assert code == 2
    assert message in err
    assert "Traceback" not in err


def test_run_tree_with_ngram_is_refused(model_dirs, capsys):
    target = str(model_dirs["llama-target"])
    code, _, err = run_cli(capsys, "run", "--prompt", "x", "--target", target, "--draft", "ngram", "--tree", "2,1")
    assert code == 2
    assert "n-gram lookup proposes one continuation" in err


def test_measure_runs_the_tree_against_plain(model_dirs, capsys, tmp_path):
    prompts = tmp_path / "w.jsonl"
    prompts.write_text('{"prompt": "def add", "tag": "code"}\n')
    code, out, err = run_cli(
        capsys, "measure", str(prompts), *models(model_dirs), "--tree", "2,2", "--max-new-tokens", "8",
        "--json", str(tmp_path / "r.json"),
    )  # fmt: skip
    assert code == 0, err
    doc = json.loads((tmp_path / "r.json").read_text())
    assert {r["method"] for r in doc["runs"]} >= {"tree"}


def test_bench_has_a_row_per_tree_shape(load):
    pair = load("llama-target", "llama-truncated")
    doc = run_bench(pair, ["def add(a, b):"], [2], RunSettings(max_new_tokens=8), lanes=("plain", "draft"),
                    trees=[(2, 1), (1, 1)])  # fmt: skip
    trees = {r["tree"]: r for r in doc["results"] if r["method"] == "tree"}
    assert set(trees) == {"2,1", "1,1"}
    assert trees["2,1"]["nodes"] == 4
    assert trees["2,1"]["k"] == 2
    assert all(r["identical_to_plain"] for r in doc["results"])  # greedy: every lane gives plain's tokens
    assert trees["2,1"]["predicted_speedup"] is None  # the chain cost model does not describe trees
    assert doc["settings"]["trees"] == [[2, 1], [1, 1]]
    assert "tree 2,1 (4 nodes)" in results_table(doc)
