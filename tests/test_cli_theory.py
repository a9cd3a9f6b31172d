"""python -m specviz theory: the calculator's numbers as text or JSON (handler called directly)."""

import argparse
import json

import pytest

from specviz.cli.theory import add_theory_parser
from specviz.core.theory import best_k, expected_tokens, ops_factor, speedup
from specviz.errors import SettingsError


def run(capsys, *argv):
    parser = argparse.ArgumentParser(prog="python -m specviz")
    add_theory_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["theory", *argv])
    assert args.handler(args) == 0
    return capsys.readouterr().out


def test_json_has_the_calculator_numbers(capsys):
    doc = json.loads(run(capsys, "--alpha", "0.8", "--k", "4", "--c", "0.05", "--json"))
    assert doc["expected_tokens"] == pytest.approx(expected_tokens(0.8, 4))
    assert doc["speedup"] == pytest.approx(speedup(0.8, 4, 0.05))
    assert doc["ops_factor"] == pytest.approx(ops_factor(0.8, 4, 0.05))
    assert (doc["best_k"], doc["best_speedup"]) == pytest.approx(best_k(0.8, 0.05))
    assert doc["break_even_alpha"] == pytest.approx(0.05)
    assert doc["speedup_measured"] is None


def test_json_with_a_verify_cost(capsys):
    doc = json.loads(run(capsys, "--alpha", "0.7", "--k", "3", "--c", "0.1", "--verify-cost", "1.4", "--json"))
    assert doc["speedup_measured"] == pytest.approx(expected_tokens(0.7, 3) / (0.3 + 1.4))
    assert doc["verify_cost"] == 1.4
    assert doc["speedup"] == pytest.approx(speedup(0.7, 3, 0.1))


def test_text_output_shows_the_formulas(capsys):
    out = run(capsys, "--alpha", "0.8", "--k", "4", "--c", "0.05", "--verify-cost", "1.3")
    assert "3.362" in out
    assert "2.801x" in out
    assert "2.241x" in out
    assert "best K" in out
    assert "break-even α" in out
    assert "E = (1 − 0.8^5) / (1 − 0.8) = 3.362" in out


@pytest.mark.parametrize(
    "argv",
    [
        ("--alpha", "1.5"),
        ("--alpha", "0.5", "--k", "0"),
        ("--alpha", "0.5", "--c", "-1"),
        ("--alpha", "0.5", "--verify-cost", "0"),
    ],
)
def test_bad_input_raises_a_settings_error(capsys, argv):
    parser = argparse.ArgumentParser()
    add_theory_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["theory", *argv])
    with pytest.raises(SettingsError):
        args.handler(args)
