"""The model card of the bundled pair is generated, all of it: `train-tiny card` measures the pair through specviz's
command line, writes measurements.json, and renders README.md from it and manifest.json; rendering again from the
same two files gives the same card, and the shipped card (and the generated section of docs/speed.md) is exactly what
they render to."""

import json
import shutil

import pytest
import torch

from specviz import methods
from specviz.train import DEFAULT_OUT, main
from specviz.train.card import SPEED_BEGIN, SPEED_END, SPEED_PAGE, render, speed_section, write_speed_section

TINY = [
    "--card-workloads",
    "code",
    "--card-prompts",
    "2",
    "--card-temperatures",
    "1",
    "--card-tokens",
    "4",
    "--card-bench-ks",
    "2",
    "--card-bench-tokens",
    "4",
    "--card-bench-prompts",
    "1",
    "--card-dtypes",
    "float32",
    "--card-samples",
    "1",
    "--card-sample-tokens",
    "4",
    "--threads",
    "1",
]  # one torch thread each: two collapse on a shared CPU


def card(out, *args: str) -> int:
    threads = torch.get_num_threads()
    try:
        return main(["card", "--out-dir", str(out), "--work-dir", str(out / "work"), *TINY, *args])
    finally:
        torch.set_num_threads(threads)


@pytest.mark.slow
def test_card_command_measures_the_pair_and_quotes_its_measurements(tmp_path):
    out = tmp_path / "pair"
    out.mkdir()
    for name in ("target", "draft"):
        (out / name).symlink_to(DEFAULT_OUT / name, target_is_directory=True)
    shutil.copy(DEFAULT_OUT / "manifest.json", out)
    assert card(out) == 0
    readme = (out / "README.md").read_text()
    m = json.loads((out / "measurements.json").read_text())
    assert m["format"] == "specviz.model_card_measurements"
    assert m["settings"]["prompts"] == 2

    # α on the workload at T = 1 (the recipe's test measures greedy), K = 4, quoted with the command that measured it
    (sampled,) = m["acceptance"]["rows"]
    assert (sampled["temperature"], sampled["prompts"]) == (1.0, 2)
    assert (
        f"| code (2 held-out prompts, the first of 20) | T = 1 | **{sampled['alpha']:.2f}** | "
        f"{sampled['alpha_ci'][0]:.2f}–{sampled['alpha_ci'][1]:.2f} |"
    ) in readme
    assert "python -m specviz measure code-first2.jsonl --k 4 --max-new-tokens 4 --temperature 1" in readme

    # speeds and costs, beside the CPU they were measured on
    env, speed = m["environment"], m["speed"][0]
    assert env["torch_threads"] >= 1
    assert env["cpu_capability"] == torch.backends.cpu.get_cpu_capability()
    assert f"## Measured speed ({env['cpu']})" in readme
    assert f"torch CPU capability {env['cpu_capability']}" in readme
    plain = next(r for r in speed["results"] if r["method"] == "plain")
    assert f"| {methods.lane_label(methods.PLAIN)} | – | {plain['tokens_per_s']:.1f} | 1.00x |" in readme
    assert {(r["method"], r["k"]) for r in speed["results"]} >= {("draft", 2), ("ngram", 2), ("hf_assisted", 2)}
    costs = speed["costs"]
    assert f"| float32 | {costs['target_step_ms']:.2f} | {costs['draft_step_ms']:.2f} | {costs['c']:.3f} |" in readme

    # the sample completion, and the training facts still from the manifest
    assert m["samples"]["rows"][0]["completion"].strip().splitlines()[0] in readme
    assert "| target | 10 | 256 | 4 | 688 | 10.01 M |" in readme
    assert "TODO" not in readme
    assert "PLACEHOLDER" not in readme
    assert "python -m specviz train-tiny card --card-workloads code --card-prompts 2" in readme

    # rerendering from the same measurements.json measures nothing and gives the identical card
    (out / "README.md").write_text("stale")
    assert card(out, "--rerender") == 0
    assert (out / "README.md").read_text() == readme


def test_the_shipped_card_is_what_its_manifest_and_measurements_render_to():
    manifest = json.loads((DEFAULT_OUT / "manifest.json").read_text())
    measured = json.loads((DEFAULT_OUT / "measurements.json").read_text())
    assert render(manifest, measured) == (DEFAULT_OUT / "README.md").read_text()
    assert measured["settings"]["prompts"] == 0
    eagle3 = render(manifest, measured).split("## EAGLE-3 head (`eagle3/`)")[1].split("\n## ")[0]
    assert f"Trained {manifest['eagle3']['steps']} steps" in eagle3 and "training-time test" in eagle3
    held = manifest["eagle3"]["held_out_val_code_shipped"]["greedy_by_step"]
    assert [f"draft step {k + 1} |" in eagle3 for k in range(4)] == [True] * 4 and f"{held[3]:.3f}" in eagle3
    assert measured["settings"]["dtypes"] == ["float32", "bfloat16"]


def test_the_speed_page_quotes_the_shipped_measurements(tmp_path):
    """docs/speed.md's generated section is what the shipped measurements.json renders to, and writing it again
    changes nothing but that section (what `train-tiny card --rerender` does for the shipped pair)."""
    measured = json.loads((DEFAULT_OUT / "measurements.json").read_text())
    page = SPEED_PAGE.read_text(encoding="utf-8")
    assert speed_section(measured) in page
    assert "](../assets/models/pystdlib/README.md)" in speed_section(measured)  # relative to docs/

    stale = page.replace(speed_section(measured), f"{SPEED_BEGIN}\nstale\n{SPEED_END}")
    copy = tmp_path / "speed.md"
    copy.write_text(stale, encoding="utf-8")
    write_speed_section(copy, measured)
    assert copy.read_text(encoding="utf-8") == page
