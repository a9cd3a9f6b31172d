"""measure on Spec-Bench (issue #38): --workload by name, --per-category, --category, --second-turn; a row too long for
the pair's context is skipped by its question id and the rest measured; the JSON carries the per-category comparison."""

import json

from specviz.cli import main
from specviz.measure.prompts import read_workload


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def tiny(model_dirs):
    target = str(model_dirs["llama-target"])
    return ["--target", target, "--draft", target, "--device", "cpu", "--max-new-tokens", "4"]


def test_measure_spec_bench_by_name_per_category_skips_long_rows_by_id(model_dirs, capsys, tmp_path):
    out_json = tmp_path / "sb.json"
    argv = ["measure", "--workload", "spec-bench", "--per-category", "2", "--category", "qa", "--category", "rag"]
    code, out, err = run_cli(capsys, *argv, "--method", "draft,ngram", *tiny(model_dirs), "--json", str(out_json))
    assert code == 0, err
    assert "measuring 4 of the workload's 320 rows (2 per category, drawn with seed 0)" in err
    skipped = [line for line in err.splitlines() if line.startswith("skipped question ")]
    assert len(skipped) == 2 and all("context of 256 tokens" in line for line in skipped)  # both RAG rows
    assert "Spec-Bench per category (published: Spec-Bench leaderboard, Vicuna-7B-v1.3 on 3090" in out
    assert "  qa: best " in out
    doc = json.loads(out_json.read_text())
    section = doc["spec_bench"]
    assert section["sample"]["per_category"] == {"qa": 2}
    assert [s.split(":")[0] for s in section["sample"]["skipped"]] == [line[8:].split(":")[0] for line in skipped]
    assert {row["tag"] for row in section["category_ranking"]} == {"qa"}
    assert section["published"]["date"] == "2025-04-22"
    assert {row["method"] for row in section["prefill"]} == {"plain", "draft", "ngram"}


def test_measure_spec_bench_refuses_a_category_that_matches_nothing(model_dirs, capsys):
    code, out, err = run_cli(capsys, "measure", "spec-bench", "--category", "translation", *tiny(model_dirs))
    assert code == 2
    assert err.strip() == (
        "error: --category 'translation' matches no row; this workload's categories: mt_bench, qa, math_reasoning, rag "
        "(MT-bench's: writing, roleplay, reasoning, math, coding, extraction, stem, humanities)."
    )


def test_measure_needs_a_workload_and_knows_the_bundled_names(model_dirs, capsys):
    code, _, err = run_cli(capsys, "measure", *tiny(model_dirs))
    assert code == 2 and err.startswith("error: Give a workload: a file, or --workload NAME")
    code, _, err = run_cli(capsys, "measure", "--workload", "specbench", *tiny(model_dirs))
    assert code == 2 and "bundled workload (spec-bench, code, prose, structured, copy)" in err


def test_second_turn_puts_the_targets_own_first_answer_before_the_second_turn(model_dirs, capsys, tmp_path):
    out_json = tmp_path / "sb.json"
    argv = ["measure", "--workload", "spec-bench", "--category", "writing", "--per-category", "1", "--second-turn"]
    code, out, err = run_cli(capsys, *argv, "--method", "draft", *tiny(model_dirs), "--json", str(out_json))
    assert code == 0, err
    doc = json.loads(out_json.read_text())
    (run,) = doc["runs"]
    (row,) = [r for r in read_workload("spec-bench").rows if r.row_id == doc["spec_bench"]["sample"]["question_ids"][0]]
    first, second = row.turns
    assert run["prompt"].startswith(first + "\n\n") and run["prompt"].endswith("\n\n" + second)
    assert len(run["prompt"]) > len(first) + len(second) + 4  # the target's answer sits between them
    assert doc["spec_bench"]["sample"]["second_turn"] is True


def test_the_server_commands_read_the_same_workload_options():
    """measure --server and the load sweep read their rows through selected_workload: by name, filtered, sampled."""
    from argparse import Namespace

    import pytest

    from specviz.cli.workloads import selected_workload
    from specviz.errors import SpecvizError

    args = Namespace(prompts_file=None, workload="spec-bench", per_category=3, category=["math_reasoning"], seed=7)
    rows = selected_workload(args).rows
    assert len(rows) == 3 and {r.tag for r in rows} == {"math_reasoning"}
    assert rows == selected_workload(args).rows  # the same seed draws the same rows
    args = Namespace(prompts_file="code", workload=None, per_category=None, category=[], seed=0)
    assert len(selected_workload(args).rows) == 20  # not Spec-Bench: every row by default
    with pytest.raises(SpecvizError, match="Two workloads given"):
        selected_workload(Namespace(prompts_file="code", workload="prose", per_category=None, category=[], seed=0))
