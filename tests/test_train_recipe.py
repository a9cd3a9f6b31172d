"""The train-tiny recipe runs end to end from a clean work dir (tiny sizes and step counts) and exports a pair that
plain transformers and specviz load; a finished target can be extended, the draft trains on code only and is then
distilled on continuations the target generated. The export ends with the model card, measured with specviz's
command line (here at tiny size) and rendered from manifest.json and measurements.json alone."""

import json

import pytest
import torch
from transformers import AutoModelForCausalLM

from specviz.core.settings import RunSettings
from specviz.engine.decode import generate
from specviz.engine.loading.models import load_pair
from specviz.train import main


@pytest.mark.slow
def test_recipe_end_to_end_with_an_extension_a_code_only_draft_and_its_tuning(tmp_path):
    work, out = tmp_path / "work", tmp_path / "pair"
    tiny = [
        "--work-dir",
        str(work),
        "--out-dir",
        str(out),
        "--vocab-size",
        "300",
        "--target-layers",
        "2",
        "--width",
        "32",
        "--context",
        "128",
        "--batch-size",
        "2",
        "--target-steps",
        "3",
        "--draft-steps",
        "2",
        "--extend-target-steps",
        "2",
        "--draft-tune-steps",
        "2",
        "--gen-tokens",
        "200",
        "--eval-minutes",
        "60",
    ]
    # the card at tiny size (the prompts of code.jsonl need the 128-token context)
    card = [
        "--card-workloads",
        "code",
        "--card-prompts",
        "1",
        "--card-temperatures",
        "0",
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
    ]
    threads = torch.get_num_threads()
    try:
        assert main(["all", *tiny, *card]) == 0
    finally:
        torch.set_num_threads(threads)
    assert json.loads((work / "target_ext1" / "result.json").read_text())["steps"] == 2
    try:
        assert main(["target", *tiny]) == 0  # rerunning finds every run finished: no second extension
    finally:
        torch.set_num_threads(threads)
    assert not (work / "target_ext2").exists()
    assert (work / "data" / "train_code.bin").stat().st_size < (work / "data" / "train.bin").stat().st_size
    manifest = json.loads((out / "manifest.json").read_text())
    assert {"target", "target_ext1", "draft_kd", "draft_gen", "draft_ce"} <= manifest["training"].keys()
    assert manifest["draft_comparison"]["tuned"]["generated_tokens"] >= 200
    assert "val_gen" in manifest["held_out"]["shipped"]
    assert "val_gen" in manifest["held_out"]["before_tuning"]
    assert manifest["models"]["draft"]["training_data"].startswith("code")
    readme = (out / "README.md").read_text()
    assert "extension 1" in readme
    assert "--draft-data code" in readme
    assert "--draft-tune-steps 2 --gen-tokens 200" in readme
    assert "distilled on code files" in readme
    assert "On held-out continuations" in readme
    check_card(out, readme)
    for name in ("target", "draft"):
        assert AutoModelForCausalLM.from_pretrained(out / name).config.vocab_size == 300
    pair = load_pair(str(out / "target"), str(out / "draft"), device="cpu")
    spec = generate(pair, "def f(x):", RunSettings(method="draft", k=3, max_new_tokens=8))
    plain = generate(pair, "def f(x):", RunSettings(method="plain", max_new_tokens=8))
    assert spec.output_ids == plain.output_ids


def check_card(out, readme: str) -> None:
    """The export ended with the card: measured just now through the CLI (tiny), and quoted from measurements.json."""
    measured = json.loads((out / "measurements.json").read_text())
    greedy = measured["acceptance"]["rows"][0]
    assert greedy["workload"] == "code"
    assert greedy["prompts"] == 1
    assert "--max-new-tokens 4" in greedy["command"]
    assert f"| greedy | **{greedy['alpha']:.2f}** | {greedy['alpha_ci'][0]:.2f}–" in readme
    assert f"## Measured speed ({measured['environment']['cpu']})" in readme
