"""--k-schedule and --confidence-threshold in run, measure and bench: adaptive K per round, refused where it means
nothing, and compared lane by lane in the bench."""

import json

import pytest

from specviz.cli import main
from specviz.core.trace_json import trace_from_json


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def self_draft(model_dirs):
    target = str(model_dirs["llama-target"])
    return ["--target", target, "--draft", target, "--device", "cpu"]


def test_run_heuristic_grows_k_after_full_accepts(model_dirs, capsys):
    """The target drafting for itself accepts every draft: K 2, 4, 6 ... (+2 a round), then the token budget."""
    argv = ["run", "--prompt", "def add", *self_draft(model_dirs), "--k", "2", "--max-new-tokens", "20"]
    code, out, err = run_cli(capsys, *argv, "--k-schedule", "heuristic", "--json")
    assert code == 0, err
    trace = trace_from_json(out)
    assert [r.schedule.k for r in trace.rounds] == [2, 4, 6, 8]
    assert [len(r.positions) for r in trace.rounds][:3] == [2, 4, 6]
    assert trace.rounds[-1].schedule.stop == "budget"
    code, out, err = run_cli(capsys, *argv, "--k-schedule", "heuristic")
    assert "heuristic schedule" in out and "drafts per round" in out


def test_run_confidence_records_each_drafts_confidence(model_dirs, capsys):
    argv = ["run", "--prompt", "def add", *self_draft(model_dirs), "--k", "4", "--max-new-tokens", "12", "--json"]
    code, out, err = run_cli(capsys, *argv, "--k-schedule", "confidence", "--confidence-threshold", "fitted")
    assert code == 0, err
    trace = trace_from_json(out)
    assert trace.settings.fit_threshold and trace.settings.confidence_threshold == 0.4
    for r in trace.rounds:
        assert len(r.schedule.confidences) == len(r.positions)


@pytest.mark.parametrize(
    "extra, words",
    [
        (["--k-schedule", "sometimes"], "--k-schedule takes constant, heuristic, confidence"),
        (["--k-schedule", "confidence", "--confidence-threshold", "1.5"], "probability from 0 to 1"),
        (["--k-schedule", "confidence", "--confidence-threshold", "high"], "fitted"),
        (["--k-schedule", "heuristic", "--method", "ngram"], "n-gram lookup"),
        (["--k-schedule", "heuristic", "--tree", "2,1"], "tree"),
    ],
)
def test_run_refuses_a_schedule_that_cannot_apply(model_dirs, capsys, extra, words):
    code, out, err = run_cli(capsys, "run", "--prompt", "x", *self_draft(model_dirs), *extra)
    assert code == 2 and words in err and "Traceback" not in err


def test_bench_compares_schedules_lane_by_lane(model_dirs, capsys, tmp_path):
    prompts = tmp_path / "p.txt"
    prompts.write_text("def add(a, b):\nfor item in items:\n")
    out_json = tmp_path / "bench.json"
    code, out, err = run_cli(
        capsys,
        "bench",
        *self_draft(model_dirs),
        "--prompts",
        str(prompts),
        "--k",
        "2",
        "--max-new-tokens",
        "10",
        "--lanes",
        "plain,draft,ngram,hf_assisted",
        "--k-schedule",
        "constant,heuristic,confidence",
        "--confidence-threshold",
        "0.4,fitted",
        "--json",
        str(out_json),
    )
    assert code == 0, err
    doc = json.loads(out_json.read_text())
    rows = {(r["method"], r.get("k_schedule", "constant")) for r in doc["results"]}
    assert rows == {
        ("plain", "constant"),
        *{("draft", s) for s in ("constant", "heuristic", "confidence 0.4", "confidence fitted")},
        ("ngram", "constant"),  # lookup takes no schedule
        *{("hf_assisted", s) for s in ("constant", "heuristic", "confidence 0.4")},  # no scikit-learn: no fit
    }
    assert all(r["identical_to_plain"] for r in doc["results"])
    heuristic = next(r for r in doc["results"] if r.get("k_schedule") == "heuristic" and r["method"] == "draft")
    assert heuristic["drafts_per_round"] > 2  # a self-draft accepts all: K grows past 2
    assert "| draft · heuristic | 2 |" in out and "drafts/round" in out


def test_measure_runs_one_schedule(model_dirs, capsys, tmp_path):
    prompts = tmp_path / "p.txt"
    prompts.write_text("def add(a, b):\n")
    argv = ["measure", str(prompts), *self_draft(model_dirs), "--k", "2", "--max-new-tokens", "8"]
    code, out, err = run_cli(capsys, *argv, "--k-schedule", "heuristic", "--json", str(tmp_path / "m.json"))
    assert code == 0, err
    assert "K schedule: heuristic" in out
    doc = json.loads((tmp_path / "m.json").read_text())
    assert doc["settings"]["k_schedule"] == "heuristic"
