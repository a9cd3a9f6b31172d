"""Hostile command lines (a list for --k, an empty --method, a negative --limit, a temperature that underflows, an
unwritable output, /dev/zero as a prompt file, a theory number that overflows, prompts all past the context): one
`error: ...` line, exit 2, no traceback, and refused before anything slow runs; finished results are never lost. Runs
use the bundled pair and 4 new tokens."""

import json
import time
from pathlib import Path

import pytest

from specviz.cli import main
from specviz.errors import SettingsError, SpecvizError

LONG = "def f():\n    return 1\n" * 400  # about 2800 tokens: past the bundled pair's context of 256


def cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def refused(capsys, *argv, match: str):
    code, out, err = cli(capsys, *argv)
    assert code == 2, (out, err)
    assert err.startswith("error: "), err
    assert match in err, err
    assert "Traceback" not in err  # refused before any run
    assert "measuring step costs" not in err
    return err


def jsonl(path: Path, *prompts: str) -> str:
    path.write_text("".join(json.dumps({"prompt": p}) + "\n" for p in prompts))
    return str(path)


def test_run_takes_one_k(capsys):
    refused(capsys, "run", "--prompt", "def f():", "--k", "4,8", match="run takes one K")


def test_measure_refuses_an_empty_method(capsys, tmp_path):
    refused(capsys, "measure", jsonl(tmp_path / "w.jsonl", "def f():"), "--method", "", match="--method is empty")
    refused(capsys, "measure", jsonl(tmp_path / "w.jsonl", "def f():"), "--method", " ", match="--method is empty")


def test_bench_refuses_a_negative_limit(capsys):
    refused(capsys, "bench", "--limit", "-1", match="--limit is how many prompts")


@pytest.mark.parametrize("temperature", ["1e-40", "1e-300", "5e-324"])
def test_run_and_bench_refuse_a_temperature_that_underflows(capsys, temperature):
    refused(capsys, "run", "--prompt", "def f():", "--temperature", temperature, match="at least 0.001")
    refused(capsys, "bench", "--lanes", "plain,hf_assisted", "--temperature", temperature, match="at least 0.001")


@pytest.mark.parametrize(
    "argv, match",
    [
        (["measure", "{w}", "--json", "/nonexistent/dir/out.json"], "the folder '/nonexistent/dir' does not exist"),
        (["measure", "{w}", "--csv", "{dir}"], "is a directory"),
        (["measure", "{w}", "--server", "http://127.0.0.1:9", "--json", "/nonexistent/d/o.json"], "does not exist"),
        (["bench", "--json", "/nonexistent/dir/b.json"], "does not exist"),
    ],
)
def test_unwritable_outputs_are_refused_before_the_run(capsys, tmp_path, argv, match):
    w = jsonl(tmp_path / "w.jsonl", "def f():")
    argv = [a.format(w=w, dir=tmp_path) for a in argv]
    start = time.perf_counter()
    refused(capsys, *argv, "--max-new-tokens", "4", match=match)
    assert time.perf_counter() - start < 10


def test_checking_an_output_keeps_an_existing_file_and_leaves_no_new_one(tmp_path):
    from specviz.cli.args import check_writable

    kept = tmp_path / "old.json"
    kept.write_text("earlier results")
    check_writable(str(kept), "--json")
    assert kept.read_text() == "earlier results"
    check_writable(str(tmp_path / "new.json"), "--json")
    assert not (tmp_path / "new.json").exists()
    with pytest.raises(SpecvizError, match="is a directory"):
        check_writable(str(tmp_path), "--csv")


def test_a_write_that_fails_at_the_end_rescues_the_results_in_the_current_folder(tmp_path, monkeypatch, capsys):
    from specviz.cli.args import write_all, write_file

    monkeypatch.chdir(tmp_path)
    with pytest.raises(SpecvizError, match="saved to") as info:
        write_file(str(tmp_path / "gone" / "out.json"), '{"runs": []}')
    spare = next(tmp_path.glob("specviz-unsaved-*-out.json"))
    assert spare.read_text() == '{"runs": []}'
    assert str(spare) in str(info.value)
    assert not write_all([(str(tmp_path / "gone" / "a.json"), lambda: "A"), (str(tmp_path / "b.csv"), lambda: "B")])
    assert (tmp_path / "b.csv").read_text() == "B"  # the first failure did not stop the second
    assert "error: Cannot write" in capsys.readouterr().err


def test_theory_json_is_strict_when_a_number_overflows(capsys):
    code, out, err = cli(capsys, "theory", "--alpha", "0.8", "--c", "1e308", "--json")
    assert code == 0
    doc = json.loads(out, parse_constant=lambda name: pytest.fail(f"non-JSON constant {name}"))
    assert doc["ops_factor"] is None
    assert "ops_factor" in err
    code, out, _ = cli(capsys, "theory", "--alpha", "0.8", "--verify-cost", "1e-320", "--json")
    assert code == 0
    assert "Infinity" not in out
    assert "NaN" not in out


@pytest.mark.parametrize(
    "argv, match",
    [
        (["run", "--prompt-file", "/dev/zero"], "larger than 2,000 kB, the limit for a prompt file"),
        (["run", "--prompt-file", "/dev/urandom"], "larger than 2,000 kB"),
        (["measure", "/dev/zero"], "larger than 2,000 kB, the limit for a workload file"),
        (["bench", "--prompts", "/dev/zero"], "larger than 2,000 kB"),
    ],
)
def test_endless_inputs_are_refused_after_reading_at_most_the_cap(capsys, argv, match):
    refused(capsys, *argv, match=match)


def test_export_html_refuses_an_endless_trace_file_after_reading_at_most_its_cap(capsys, tmp_path, monkeypatch):
    """The exporter reads a trace at most to its cap (as a prompt file is read): /dev/zero is refused at once,
    not read until the memory runs out."""
    import specviz.cli.export

    start = time.perf_counter()
    err = refused(capsys, "export-html", "/dev/zero", "-o", str(tmp_path / "x.html"), match="larger than 64 MB")
    assert "/dev/zero" in err and "the most a trace may be here" in err
    assert time.perf_counter() - start < 10
    monkeypatch.setattr(specviz.cli.export, "MAX_TRACE_BYTES", 1000)  # a file one byte over the cap: refused
    big = tmp_path / "big.json"
    big.write_bytes(b" " * 1001)
    refused(capsys, "export-html", str(big), "-o", str(tmp_path / "y.html"), match="larger than")
    assert not (tmp_path / "x.html").exists() and not (tmp_path / "y.html").exists()


@pytest.mark.parametrize("given", ["0", "-2"])
def test_an_exit_layer_of_zero_or_less_is_refused_not_replaced_by_the_default(capsys, given):
    """E = 0 drafts with no layer at all: refused with what E is, never run at the pair's default E instead."""
    for pair in ([], ["--pair", "pystdlib"]):
        err = refused(
            capsys, "run", *pair, "--method", "early_exit", "--exit-layer", given, "--prompt", "def f():",
            match=f"--exit-layer {given}: E is how many of the target's first layers draft, from 1 to L - 1",
        )  # fmt: skip
        assert "decoded" not in err


def test_a_workload_whose_every_prompt_is_too_long_is_refused_before_any_run(capsys, tmp_path):
    w = jsonl(tmp_path / "long.jsonl", LONG, LONG + "x")
    err = refused(capsys, "measure", w, "--max-new-tokens", "4", match="Every prompt (2) is longer than")
    assert "context of 256 tokens" in err
    refused(capsys, "bench", "--prompts", w, "--max-new-tokens", "4", "--k", "2", match="Every prompt (2)")


@pytest.mark.parametrize(
    "text, name, match",
    [
        ("[" * 50_000 + "\n", "deep.jsonl", "nested too deeply"),
        ('{"prompt": "a\\ud800b"}\n', "surrogate.jsonl", "lone surrogate"),
        ('prompt\n"never closed\n', "quote.csv", "never closes"),
        ("prompt\nc\rd\n", "cr.csv", "carriage return"),
    ],
    ids=["deep-jsonl", "lone-surrogate", "unterminated-quote", "bare-cr"],
)
def test_workload_files_with_only_bad_rows_are_one_clear_error(capsys, tmp_path, text, name, match):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8", errors="surrogatepass", newline="")
    refused(capsys, "measure", str(path), "--max-new-tokens", "4", match=match)


def test_measure_skips_the_prompts_that_cannot_run_and_measures_the_rest(capsys, tmp_path):
    w = tmp_path / "mixed.jsonl"
    w.write_text(
        json.dumps({"prompt": LONG}) + "\n" + json.dumps({"prompt": "def g():"}) + "\n" + '{"prompt": "a\\ud800b"}\n'
    )
    out_json, out_csv = tmp_path / "out.json", tmp_path / "out.csv"
    code, out, err = cli(
        capsys, "measure", str(w), "--max-new-tokens", "4", "--json", str(out_json), "--csv", str(out_csv)
    )
    assert code == 0, err
    assert "skipped line 3: the prompt holds '\\ud800'" in err  # at parse time
    assert "skipped line 1: The prompt is" in err  # before the warm-up
    assert "context of 256 tokens" in err
    assert [r["prompt"] for r in json.loads(out_json.read_text())["runs"]] == ["def g():"]
    assert out_csv.read_text().count("\n") == 2  # header and one row


def test_encode_prompt_refuses_a_lone_surrogate_from_anywhere():
    from specviz.engine.decode import encode_prompt
    from specviz.engine.loading.models import BUNDLED_TARGET, load_pair

    pair = load_pair(BUNDLED_TARGET, None, device="cpu")
    with pytest.raises(SettingsError, match="lone surrogate"):
        encode_prompt(pair, "def f():\ud800")
    assert encode_prompt(pair, "def f():")


def test_run_workload_refuses_an_empty_workload_before_any_run():
    from specviz.core.settings import RunSettings
    from specviz.measure.workload import run_workload

    def never(*_):
        raise AssertionError("no run should start")

    with pytest.raises(SettingsError, match="Nothing to measure"):
        run_workload(never, [], ["draft"], [4], RunSettings())
