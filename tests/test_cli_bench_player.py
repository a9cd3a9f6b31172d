"""python -m specviz bench-player: a short run's figures go into the JSON file under their label, beside the labels
already there, with the CPU named; bad --tokens is one message and exit code 2. (Timings are recorded, not
asserted: assets/bench/player-*.json holds the measured ones.)"""

import json

import pytest

from specviz.cli.main import main


@pytest.mark.slow  # decodes twice, builds the bundle twice and runs export-html in a fresh process
def test_the_figures_are_merged_under_their_label_with_the_cpu_named(tmp_path, capsys):
    out = tmp_path / "player.json"
    out.write_text(json.dumps({"measurements": {"before": {"kept": True}}}))
    assert main(["bench-player", "--tokens", "8", "--no-browser", "--label", "after", "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["measurements"]["before"] == {"kept": True}
    after = doc["measurements"]["after"]
    assert after["environment"]["cpu"] and after["environment"]["cpu_capability"]
    (run,) = after["runs"]
    assert run["asked_tokens"] == 8 and run["tokens"] >= 8 and run["bundle_version"] == 3
    assert run["steps"] > run["rounds"] > 0 and run["bundle_json_bytes"] > run["bundle_packed_bytes"] > 0
    assert run["step_entry_bytes_max"] < 1000 and run["steps_table_bytes_per_step"] < 400 and "browser" not in run
    assert len(run["load_average"]) == 2 and run["export_html_bytes"] > 100_000
    assert "8 tokens" in capsys.readouterr().out


@pytest.mark.parametrize("tokens", ["x", "0", ","])
def test_bad_tokens_are_one_message(tokens, capsys):
    assert main(["bench-player", "--tokens", tokens, "--no-browser"]) == 2
    err = capsys.readouterr().err
    assert "--tokens" in err and "Traceback" not in err


def test_a_pair_by_name_and_a_target_together_are_one_message(capsys):
    assert main(["bench-player", "--pair", "smollm2", "--target", "x", "--no-browser"]) == 2
    err = capsys.readouterr().err
    assert "--pair names the target already" in err and "Traceback" not in err


def test_an_unknown_preset_is_one_message_naming_the_pairs_presets(capsys):
    assert main(["bench-player", "--preset", "poetry", "--no-browser"]) == 2
    err = capsys.readouterr().err
    assert "--preset 'poetry'" in err and "code, structured, prose" in err and "Traceback" not in err
