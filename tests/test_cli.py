"""The CLI prints marked text and a summary, or the full trace as JSON; bad input is one line on stderr, exit 2."""

import json

import pytest

from specviz.cli import main
from specviz.core.trace_json import trace_from_json


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_run_prints_marked_text_and_a_summary(model_dirs, capsys):
    target = str(model_dirs["llama-target"])
    code, out, err = run_cli(
        capsys,
        "run",
        "--prompt",
        "def add",
        "--target",
        target,
        "--draft",
        target,
        "--k",
        "3",
        "--max-new-tokens",
        "12",
        "--device",
        "cpu",
    )
    assert code == 0, err
    assert out.startswith("def add")
    assert "[+" in out  # a self-draft accepts everything: bonus tokens are marked
    assert "K=3, greedy: 12 tokens in 3 rounds · α 1.00 · τ 4.00" in out


def test_run_in_bfloat16_records_the_precision(model_dirs, capsys):
    target = str(model_dirs["llama-target"])
    code, out, err = run_cli(
        capsys,
        "run",
        "--prompt",
        "def add",
        "--target",
        target,
        "--draft",
        target,
        "--max-new-tokens",
        "6",
        "--dtype",
        "bfloat16",
        "--json",
    )
    assert code == 0, err
    assert trace_from_json(out).meta["dtype"] == "bfloat16"


def test_run_json_is_a_trace_document(model_dirs, capsys):
    target, draft = str(model_dirs["gpt2-target"]), str(model_dirs["gpt2-truncated"])
    code, out, _ = run_cli(
        capsys,
        "run",
        "--prompt",
        "for item in",
        "--target",
        target,
        "--draft",
        draft,
        "--temperature",
        "1",
        "--top-p",
        "0.9",
        "--seed",
        "3",
        "--max-new-tokens",
        "16",
        "--json",
    )
    assert code == 0
    trace = trace_from_json(out)
    assert trace.settings.sampling.top_p == 0.9
    assert trace.settings.seed == 3
    assert len(trace.output_ids) == 16
    assert json.loads(out)["totals"]["committed"] == 16


@pytest.mark.parametrize("mode", ["ngram", "plain"])
def test_ngram_and_plain_need_no_draft_model(model_dirs, capsys, mode):
    extra = ["--draft", "ngram"] if mode == "ngram" else ["--plain", "--draft", "/not/loaded"]
    code, out, err = run_cli(
        capsys,
        "run",
        "--prompt",
        "a b a b a",
        "--target",
        str(model_dirs["llama-target"]),
        *extra,
        "--max-new-tokens",
        "8",
        "--json",
    )
    assert code == 0, err
    assert trace_from_json(out).settings.method == mode


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--k", "0"], "K (draft length) must be a whole number from 1 to 16"),
        (["--temperature", "-1"], "temperature must be >= 0"),
        (["--top-p", "1.5", "--temperature", "1"], "top-p must be in (0, 1]"),
        (["--target", "/no/such/model"], "is not a directory"),
        (["--prompt", "  "], "The prompt is empty"),
        (["--dtype", "half"], "dtype must be one of auto, float32, bfloat16, float16"),
    ],
)
def test_bad_input_is_one_clear_line(model_dirs, capsys, argv, message):
    base = ["run", "--prompt", "hello", "--target", str(model_dirs["llama-target"]), "--draft", "ngram"]
    code, _, err = run_cli(capsys, *base, *argv)
    assert code == 2
    assert err.startswith("error: ")
    assert message in err
    assert "Traceback" not in err


def test_measure_writes_json_and_csv_and_reports_bad_rows(model_dirs, capsys, tmp_path):
    prompts = tmp_path / "w.jsonl"
    prompts.write_text('{"prompt": "def add", "tag": "code"}\n{"oops": 1}\n{"prompt": "The fox", "tag": "prose"}\n')
    target, draft = str(model_dirs["llama-target"]), str(model_dirs["llama-truncated"])
    code, out, err = run_cli(
        capsys,
        "measure",
        str(prompts),
        "--target",
        target,
        "--draft",
        draft,
        "--method",
        "draft,ngram",
        "--k",
        "2,3",
        "--max-new-tokens",
        "10",
        "--json",
        str(tmp_path / "r.json"),
        "--csv",
        str(tmp_path / "r.csv"),
    )
    assert code == 0, err
    assert 'skipped line 2: missing or empty "prompt"' in err
    assert out.splitlines()[0].split()[:4] == ["source", "tag", "method", "K"]
    assert out.splitlines()[2].split()[:2] == ["specviz", "all"]  # in-process runs, the overall row first
    doc = json.loads((tmp_path / "r.json").read_text())
    assert len(doc["runs"]) == 2 * 2 * 2
    assert {r["tag"] for r in doc["runs"]} == {"code", "prose"}
    assert len((tmp_path / "r.csv").read_text().splitlines()) == 1 + 8


@pytest.mark.parametrize(
    "argv, message",
    [(["--k", "2,x"], "--k takes whole numbers"), (["--method", "magic"], "--method takes any of draft, ngram")],
)
def test_measure_bad_options(model_dirs, capsys, tmp_path, argv, message):
    prompts = tmp_path / "w.txt"
    prompts.write_text("hello\n")
    code, _, err = run_cli(capsys, "measure", str(prompts), "--target", str(model_dirs["llama-target"]), *argv)
    assert code == 2
    assert message in err


TAGGED_TXT = (
    "### tag: code\ndef add\n---\nclass A\n---\nimport os\n---\nx = 1\n---\nfor i in\n"
    "### tag: prose\nThe fox\n---\nOnce upon\n---\nThis module\n---\nA list\n---\nThe result\n"
)


def test_measure_judges_each_tag_and_writes_the_verdict_and_settings(model_dirs, capsys, tmp_path):
    """A past bug: the command line printed no go / no-go, and its files carried none."""
    import csv

    from specviz.measure.recommend import RULE

    prompts = tmp_path / "w.txt"
    prompts.write_text(TAGGED_TXT)
    target, draft = str(model_dirs["llama-target"]), str(model_dirs["llama-truncated"])
    code, out, err = run_cli(
        capsys,
        *("measure", str(prompts), "--target", target, "--draft", draft, "--max-new-tokens", "3", "--seed", "4"),
        *("--temperature", "0.5", "--json", str(tmp_path / "r.json"), "--csv", str(tmp_path / "r.csv")),
    )
    assert code == 0, err
    assert "10 prompt(s) by tag: code (5), prose (5); each tag is judged on its own" in err  # before measuring
    lines = [line for line in out.splitlines() if RULE in line]
    assert [line.split(" for ")[1].split(":")[0] for line in lines] == [
        "all prompts",
        "prompts tagged 'code'",
        "prompts tagged 'prose'",
    ]
    doc = json.loads((tmp_path / "r.json").read_text())
    assert [g["tag"] for g in doc["verdict"]["groups"]] == ["all", "code", "prose"]
    assert [line.split(" for ")[0] for line in lines] == [g["verdict"] for g in doc["verdict"]["groups"]]
    rows = list(csv.DictReader((tmp_path / "r.csv").open()))
    env = doc["settings"]
    assert {(r["device"], r["dtype"], r["target"], r["draft"]) for r in rows} == {
        (env["device"], env["dtype"], env["target"], env["draft"])
    }
    assert {(float(r["temperature"]), int(r["seed"]), int(r["max_new_tokens"])) for r in rows} == {(0.5, 4, 3)}
    by_tag = {g["tag"]: g["verdict"] for g in doc["verdict"]["groups"]}
    assert all(r["verdict"] == by_tag[r["tag"]] and r["overall_verdict"] == by_tag["all"] for r in rows)


def test_measure_refuses_a_tag_line_written_wrong_naming_its_line(model_dirs, capsys, tmp_path):
    prompts = tmp_path / "w.txt"
    prompts.write_text("def add\n### tag code\nclass A\n")
    code, _, err = run_cli(capsys, "measure", str(prompts), "--target", str(model_dirs["llama-target"]))
    assert code == 2
    assert "line 2: '### tag code' is not a tag line: write '### tag: NAME'" in err


@pytest.mark.parametrize("name", ["none", "NGRAM"])  # the name, and the older one
def test_draft_none_runs_the_target_alone_with_n_gram_lookup(model_dirs, capsys, name):
    code, out, err = run_cli(
        capsys, "run", "--prompt", "hello", "--target", str(model_dirs["llama-target"]), "--draft", name,
        "--max-new-tokens", "4",
    )  # fmt: skip
    assert code == 0, err
    assert "ngram, K=4" in out


def test_draft_none_with_a_method_that_needs_a_draft_model_says_which_do_not(model_dirs, capsys):
    target = str(model_dirs["llama-target"])
    code, _, err = run_cli(capsys, "run", "--prompt", "hi", "--target", target, "--draft", "none", "--method", "draft")
    assert code == 2 and "draft needs a draft model" in err and "Traceback" not in err
