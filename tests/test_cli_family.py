"""`measure --method all`: every method the pair and the heads beside it can run, each one left out
named with the reason, ranked by measured speedup per tag in the text, the JSON and the CSV."""

import csv
import json
import shutil

from test_cli import TAGGED_TXT, run_cli

from specviz import methods


def test_measure_all_runs_the_whole_family_and_ranks_it_per_tag(model_dirs, capsys, tmp_path):
    prompts = tmp_path / "w.txt"
    prompts.write_text(TAGGED_TXT)
    target, draft = str(model_dirs["llama-target"]), str(model_dirs["llama-truncated"])
    code, out, err = run_cli(
        capsys,
        *("measure", str(prompts), "--method", "all", "--target", target, "--draft", draft, "--k", "2"),
        *("--max-new-tokens", "4", "--json", str(tmp_path / "r.json"), "--csv", str(tmp_path / "r.csv")),
    )
    assert code == 0, err
    # the 3-layer target has no layer 4 to exit at (the default E): early exit is left out, with why
    assert "left out early_exit: The exit layer E must be from 1 to 2" in err
    family = [m for m in methods.PROPOSERS if m != methods.EARLY_EXIT]
    assert f"the whole family: {', '.join(family)}" in err  # the heads beside the target are in it
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["settings"]["methods"] == family
    ranked = doc["ranking"]
    n = len(family)  # the heads beside the tiny target: EAGLE-1, EAGLE-3, Medusa and MTP
    assert [r["tag"] for r in ranked] == ["all"] * n + ["code"] * n + ["prose"] * n
    for tag in ("all", "code", "prose"):
        rows = [r for r in ranked if r["tag"] == tag]
        assert sorted(r["method"] for r in rows) == sorted(family)
        assert [r["rank"] for r in rows] == list(range(1, n + 1))
        speedups = [r["speedup"] for r in rows]
        assert speedups == sorted(speedups, reverse=True)  # best first
        assert all(r["drafts_per_round"] is not None for r in rows)
    every = {r["method"]: r for r in ranked if r["tag"] == "all"}
    assert every["ngram"]["c"] == every["suffix"]["c"] == 0.0  # lookups run no model: 0, whatever the clock did
    models = [m for m in family if m not in (methods.NGRAM, methods.SUFFIX)]
    busy = doc["costs"]["implausible"]  # a loaded machine can time a verify pass under one step: then c is dropped
    if busy is None:
        assert all(every[m]["c"] > 0 and every[m]["c_note"] == "" for m in models)
        assert "c is dropped" not in out
    else:  # dropped, and said so: in the table, in a line under it, and in the JSON
        assert all(every[m]["c"] is None and every[m]["c_note"].startswith("dropped: ") for m in models)
        assert "c is dropped for " in out and busy.removesuffix(" Run again on a quieter machine.")[:40] in out
    # the text: the ranked table, then the best per tag
    assert "Ranked by measured speedup over plain decoding, per tag" in out
    best = [line for line in out.splitlines() if line.startswith("Best for ")]
    assert len(best) == 3
    for line, tag in zip(best, ("all", "code", "prose")):
        top = next(r for r in ranked if r["tag"] == tag and r["best"])
        assert f"{top['setting']} at {top['speedup']:.2f}x" in line
    rows = list(csv.DictReader((tmp_path / "r.csv").open()))
    assert {r["method"] for r in rows} == set(family)
    for row in rows:
        own = next(r for r in ranked if (r["tag"], r["method"]) == (row["tag"], row["method"]))
        assert int(row["tag_rank"]) == own["rank"]


def test_measure_all_on_a_busy_machine_says_which_measured_costs_it_dropped(model_dirs, capsys, tmp_path, monkeypatch):
    """Step costs that cannot be true (a verify pass timed under a one-token step, as a loaded machine times it) drop
    every measured c: the text table says "dropped", a line under it names the settings and why, the JSON's rows say
    so in c_note; a lookup's c stays 0. The verify timings are made busy here; every other figure is measured."""
    from dataclasses import replace

    from specviz.measure import local

    measured = local.step_costs

    def busy(*args, **kwargs):
        costs = measured(*args, **kwargs)
        return replace(costs, verify_s=tuple(0.5 * costs.target_step_s for _ in costs.verify_s))

    monkeypatch.setattr(local, "step_costs", busy)
    prompts = tmp_path / "w.txt"
    prompts.write_text("def add\n---\nclass A\n")
    target, draft = str(model_dirs["llama-target"]), str(model_dirs["llama-truncated"])
    code, out, err = run_cli(
        capsys,
        *("measure", str(prompts), "--method", "draft,ngram", "--target", target, "--draft", draft, "--k", "2"),
        *("--max-new-tokens", "3", "--json", str(tmp_path / "r.json")),
    )
    assert code == 0, err
    doc = json.loads((tmp_path / "r.json").read_text())
    assert "timed at 0.50 of a one-token step" in doc["costs"]["implausible"]
    rows = {r["method"]: r for r in doc["ranking"] if r["tag"] == "all"}
    assert rows["ngram"]["c"] == 0.0 and rows["ngram"]["c_note"] == ""
    assert rows["draft"]["c"] is None and rows["draft"]["c_note"].startswith("dropped: the step costs timed just")
    table = out.split("Ranked by measured speedup", 1)[1]
    assert next(line for line in table.splitlines() if "draft model, K = 2" in line).split()[-2] == "dropped"
    assert (
        "c is dropped for draft model, K = 2: the step costs timed just before the workload cannot be true (a verify "
        "pass over 2 tokens timed at 0.50 of a one-token step, which it cannot be: the machine was busy while timing), "
        "so no c is built on them."
    ) in out


def test_measure_all_leaves_out_what_this_pair_lacks_and_says_why(model_dirs, capsys, tmp_path):
    alone = tmp_path / "alone" / "target"  # a copy of the target with no head beside it
    shutil.copytree(model_dirs["llama-target"], alone)
    prompts = tmp_path / "w.txt"
    prompts.write_text("def add\n---\nclass A\n")
    code, out, err = run_cli(
        capsys,
        *("measure", str(prompts), "--method", "family", "--target", str(alone), "--draft", "ngram"),
        *("--exit-layer", "1", "--k", "2", "--max-new-tokens", "3", "--json", str(tmp_path / "r.json")),
    )
    assert code == 0, err
    assert "left out draft: no draft model is loaded" in err
    for name, label in (("eagle", "EAGLE-1 head"), ("eagle3", "EAGLE-3 head"), ("medusa", "Medusa heads")):
        assert f"left out {name}: no {label} found beside the target (give one with --head DIR)" in err
    assert "the whole family: ngram, suffix, early_exit, quantized" in err
    doc = json.loads((tmp_path / "r.json").read_text())
    assert {r["method"] for r in doc["ranking"]} == {"ngram", "suffix", "early_exit", "quantized"}


def test_measure_all_refuses_a_tree_shape(capsys, tmp_path):
    prompts = tmp_path / "w.txt"
    prompts.write_text("def add\n")
    code, _, err = run_cli(capsys, "measure", str(prompts), "--method", "all", "--tree", "2,1")
    assert code == 2
    assert "--method all measures the chain methods; a tree needs a tree method" in err


def test_measure_all_through_a_server_is_refused_before_any_request(capsys, tmp_path):
    prompts = tmp_path / "w.txt"
    prompts.write_text("def add\n")
    code, _, err = run_cli(capsys, "measure", str(prompts), "--method", "all", "--server", "http://127.0.0.1:9")
    assert code == 2
    assert "--method all measures the whole family in this process; a server runs the one method" in err


def test_measure_through_a_server_writes_its_one_setting_ranked_by_tau(capsys, tmp_path):
    """A scripted server (no vLLM): its files hold the ranking too, with no speedup (no plain baseline)."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent / "remote"))
    from fake_server import fake_server
    from test_client import vllm_like

    prompts = tmp_path / "w.txt"
    prompts.write_text("def add\n---\nclass A\n")
    with fake_server(vllm_like()) as (url, _):
        out = str(tmp_path / "r.json")
        code, _, err = run_cli(capsys, "measure", str(prompts), "--server", url, "--max-new-tokens", "6", "--json", out)
    assert code == 0, err
    ranked = json.loads((tmp_path / "r.json").read_text())["ranking"]
    assert [(r["tag"], r["rank"], r["method"], r["speedup"]) for r in ranked] == [
        ("all", 1, "draft", None),
        ("untagged", 1, "draft", None),
    ]
    assert ranked[0]["speedup_ci"] == [None, None]  # not measured: null, never NaN
    assert ranked[0]["tau"] > 1 and ranked[0]["c"] is None
