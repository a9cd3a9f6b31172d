"""The command line with a draft that speaks another tokenizer: --method tli|slem runs it, --draft PAIR names a pair's
draft model, and a draft-model method refuses it in one line."""

from __future__ import annotations

import json

from specviz.cli import main
from specviz.cli.model_args import pair_draft
from specviz.engine.loading.models import BUNDLED_DRAFT


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_run_and_measure_draft_across_tokenizers(model_dirs, capsys, tmp_path):
    target, other = str(model_dirs["llama-target"]), str(model_dirs["other-vocab"])
    common = ("--target", target, "--draft", other, "--max-new-tokens", "8", "--device", "cpu")
    code, out, err = run_cli(capsys, "run", "--prompt", "def add", "--method", "slem", "--json", *common)
    assert code == 0, err
    trace = json.loads(out)
    assert trace["meta"]["intersection"] > 0 and all(r["crossing"]["method"] == "slem" for r in trace["rounds"])
    prompts = tmp_path / "p.txt"
    prompts.write_text("def add\nclass Counter\n", encoding="utf-8")
    code, out, err = run_cli(capsys, "measure", str(prompts), "--method", "tli,slem", "--k", "2", *common)
    assert code == 0, err
    assert " tli " in out and " slem " in out


def test_a_draft_model_method_refuses_a_draft_with_another_tokenizer_in_one_line(model_dirs, capsys):
    target, other = str(model_dirs["llama-target"]), str(model_dirs["other-vocab"])
    code, out, err = run_cli(capsys, "run", "--prompt", "def add", "--target", target, "--draft", other)
    assert code == 2 and err.startswith("error: ") and len(err.strip().splitlines()) == 1
    assert "different tokenizers" in err


def test_a_pair_name_as_draft_means_its_draft_model():
    assert pair_draft("pystdlib") == BUNDLED_DRAFT
    assert pair_draft("ngram") == "ngram"


def test_a_vllm_draft_model_server_is_read_as_tli_when_declared():
    """vLLM's use_heterogeneous_vocab runs under method draft_model: the agreement command declares TLI."""
    from specviz import methods
    from specviz.remote.vllm import _method_name

    notes = []
    assert _method_name(methods.VLLM_DRAFT_MODEL, methods.TLI, notes) == methods.TLI
    assert _method_name(None, methods.TLI, []) == methods.TLI
    assert "its own vocabulary" in notes[0]
    assert _method_name(methods.VLLM_DRAFT_MODEL, None, []) == methods.DRAFT  # unchanged otherwise
