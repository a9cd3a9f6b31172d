"""torch's thread count on a CPU: auto runs a narrow model on one thread, a number is taken as given, and anything
else is refused with what to write instead."""

import pytest
import torch

from specviz.core.settings import NARROW_WIDTH, parse_threads
from specviz.engine.forward.threads import apply_threads, auto_threads
from specviz.errors import SettingsError


def test_auto_gives_a_narrow_model_one_thread_and_a_wide_one_torchs_default():
    assert auto_threads(256, default=8) == 1
    assert auto_threads(NARROW_WIDTH, default=8) == 1
    assert auto_threads(NARROW_WIDTH * 2, default=8) == 8


@pytest.mark.parametrize("text, parsed", [(None, "auto"), ("", "auto"), ("AUTO", "auto"), ("3", 3), (2, 2)])
def test_threads_parse_auto_or_a_whole_number(text, parsed):
    assert parse_threads(text) == parsed


@pytest.mark.parametrize("text", ["0", "-1", "two", "1.5"])
def test_anything_else_is_refused_saying_what_to_write(text):
    with pytest.raises(SettingsError, match="threads must be auto or a whole number from 1 up"):
        parse_threads(text)


def test_loading_a_pair_sets_the_threads_it_asks_for(model_dirs, monkeypatch):
    from specviz.engine.loading.models import load_pair

    before = torch.get_num_threads()
    try:
        pair = load_pair(str(model_dirs["llama-target"]), None, device="cpu", threads=2)
        assert torch.get_num_threads() == 2
        assert apply_threads("auto", pair.target) == 1 and torch.get_num_threads() == 1  # a tiny model is narrow
    finally:
        torch.set_num_threads(before)


def test_the_cli_refuses_a_bad_thread_count_before_loading_anything(capsys):
    from specviz.cli.main import main

    assert main(["run", "--prompt", "x", "--threads", "many"]) == 2
    assert "threads must be auto or a whole number from 1 up; got 'many'" in capsys.readouterr().err
