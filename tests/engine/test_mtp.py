"""The MTP module (engine/heads/mtp.py) and its proposer: greedy output equal to plain decoding (a random module on the
tiny target; the shipped module on held-out prompts, drafting some accepted tokens), chains and trees, its files read
back exactly and refused when they are not an MTP module's, and its names in the registry and on the command line."""

from __future__ import annotations

import json

import pytest
import torch

from specviz import methods
from specviz.core.sampling import SamplingSettings
from specviz.core.settings import RunSettings
from specviz.engine import proposers
from specviz.engine.decode import generate
from specviz.engine.heads.mtp import MTP_WEIGHTS, is_mtp, load_mtp, new_mtp, save_mtp
from specviz.engine.loading.models import ASSETS, BUNDLED_PAIR, HEAD_KINDS, find_heads, load_pair
from specviz.engine.proposers.mtp import MtpProposer
from specviz.errors import ModelLoadError

PROMPTS = ["def add(a, b):\n    return", "class Counter:\n    def increment(self, step=1):\n", "The quick brown fox"]
WORKLOADS = ASSETS / "workloads"
HELD_OUT = [json.loads(line)["prompt"] for line in (WORKLOADS / "code.jsonl").read_text().splitlines()[:4]]
HELD_OUT += [json.loads(line)["prompt"] for line in (WORKLOADS / "prose.jsonl").read_text().splitlines()[:2]]
MTP = methods.MTP


def greedy(k: int = 4, max_new: int = 30, tree: tuple[int, ...] = ()) -> RunSettings:
    return RunSettings(method=MTP, k=k, max_new_tokens=max_new, stop_at_eos=False, tree=tree)


def plain(max_new: int = 30) -> RunSettings:
    return RunSettings(method=methods.PLAIN, max_new_tokens=max_new, stop_at_eos=False)


@pytest.fixture(scope="module")
def tiny(model_dirs, tmp_path_factory):
    """The tiny llama target with a random MTP module given by --head."""
    root = tmp_path_factory.mktemp("mtp")
    target_dir = str(model_dirs["llama-target"])
    bare = load_pair(target_dir, None, device="cpu")
    directory = save_mtp(new_mtp(bare.target, seed=3), root / "mtp", dtype=torch.float32)
    return load_pair(target_dir, None, device="cpu", head=str(directory))


def test_the_registry_and_the_command_line_name_it():
    m = methods.get(MTP)
    assert m.loads_head and m.branches and m.adaptive and m.draft_cost == methods.FEATURE_HEAD_STEP
    assert m.vllm_method == methods.VLLM_MTP  # served on the target's MiMo re-export (engine/heads/mimo.py)
    assert m.vllm_config(4, "ignored") == {"method": "mtp", "num_speculative_tokens": 4}  # the served model's own layer
    assert MTP in methods.PROPOSERS and MTP in methods.LANES
    assert proposers.proposer_class(MTP) is MtpProposer
    assert HEAD_KINDS[MTP].beside == methods.get(methods.MTP).head.beside == "mtp" and HEAD_KINDS[MTP].stage == "mtp"


@pytest.mark.parametrize("k", [1])  # K = 3: the method contract (test_method_contract.py)
def test_greedy_mtp_with_a_random_module_equals_plain(tiny, k):
    for prompt in PROMPTS:
        assert generate(tiny, prompt, greedy(k)).output_ids == generate(tiny, prompt, plain()).output_ids


def test_its_tree_of_top_tokens_equals_plain_too(tiny):
    spec = generate(tiny, PROMPTS[0], greedy(k=3, tree=(2, 2, 1)))
    assert spec.rounds[0].is_tree
    assert spec.output_ids == generate(tiny, PROMPTS[0], plain()).output_ids


def test_sampled_mtp_runs_are_seeded(tiny):
    settings = RunSettings(method=MTP, k=3, max_new_tokens=16, sampling=SamplingSettings(temperature=1.0), seed=5)
    a, b = generate(tiny, PROMPTS[2], settings), generate(tiny, PROMPTS[2], settings)
    assert a.output_ids == b.output_ids
    assert all(0 < p.q <= 1 for r in a.rounds for p in r.positions)


def test_the_files_hold_exactly_its_weights_and_read_back(tiny, tmp_path):
    module = tiny.load_head_for(MTP)
    directory = save_mtp(module, tmp_path / "again", dtype=torch.float32)
    assert is_mtp(directory) and not is_mtp(tmp_path)
    from safetensors import safe_open

    with safe_open(str(directory / "model.safetensors"), "pt") as f:
        assert set(f.keys()) == set(MTP_WEIGHTS)
    config = json.loads((directory / "config.json").read_text())
    assert config["architectures"] == ["SpecvizMTP"] and config["num_nextn_predict_layers"] == 1
    again = load_mtp(directory, tiny.target)
    for name, tensor in module.saved_state_dict().items():
        assert torch.equal(again.saved_state_dict()[name], tensor)


def test_a_directory_that_is_no_mtp_module_is_refused(tiny, tmp_path, model_dirs):
    directory = save_mtp(tiny.load_head_for(MTP), tmp_path / "bad", dtype=torch.float32)
    config = json.loads((directory / "config.json").read_text())
    (directory / "config.json").write_text(json.dumps({**config, "architectures": ["LlamaForCausalLM"]}))
    with pytest.raises(ModelLoadError, match="is not an MTP module"):
        load_mtp(directory, tiny.target)
    with pytest.raises(ModelLoadError, match="is not a feature head directory"):
        find_heads(str(model_dirs["llama-target"]), str(directory))


@pytest.mark.slow
def test_the_shipped_module_is_found_beside_the_bundled_target_and_greedy_equals_plain():
    bundled = load_pair(device="cpu", draft=None)
    assert bundled.head(MTP) == str(BUNDLED_PAIR / methods.get(methods.MTP).head.beside)
    accepted = 0
    for prompt in HELD_OUT:
        spec = generate(bundled, prompt, greedy(k=3, max_new=40))
        assert spec.output_ids == generate(bundled, prompt, plain(40)).output_ids
        accepted += spec.totals.accepted
    assert accepted > 0  # a trained module: some drafts pass


def test_cli_runs_the_mtp_method_on_the_bundled_target(capsys):
    from specviz.cli import main

    code = main(["run", "--prompt", "def add(a, b):", "--draft", "none", "--method", MTP, "--k", "3",
                 "--max-new-tokens", "12", "--device", "cpu", "--json"])  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0, err
    assert json.loads(out)["settings"]["method"] == MTP


def test_bench_times_an_mtp_step_and_predicts_the_mtp_lane_with_it(load):
    from specviz.measure.bench import run_bench

    pair = load("llama-target")  # the random module beside the tiny targets (tests/conftest.py)
    doc = run_bench(pair, [PROMPTS[0]], [2], RunSettings(max_new_tokens=6), lanes=(methods.PLAIN, MTP))
    costs = doc["costs"]
    assert doc["environment"]["heads"] == {MTP: pair.head(MTP)}
    assert costs["step_ms"][MTP] > 0 and costs["c_of"][MTP] == pytest.approx(
        costs["step_ms"][MTP] / costs["target_step_ms"]
    )
    assert set(costs["step_ms"]) == {MTP}  # only the MTP module's step was asked for
    row = next(r for r in doc["results"] if r["method"] == MTP)
    assert row["identical_to_plain"]
    if costs["implausible"] is None:  # a busy machine's timings build no prediction
        assert row["c"] == pytest.approx(costs["c_of"][MTP])


def test_a_dynamic_tree_is_grown_by_the_module_and_greedy_equals_plain(tiny):
    """The registry offers MTP dynamic trees; the run once drafted a chain while its trace said tree dynamic:…"""
    from specviz.core.dyntree import DynamicTree

    settings = RunSettings(method=MTP, dynamic=DynamicTree(6, 3, 2), max_new_tokens=20, stop_at_eos=False)
    spec = generate(tiny, PROMPTS[0], settings)
    assert any(r.scored for r in spec.rounds)  # the round's candidates were scored and grown, not a chain drafted
    assert any(len(r.nodes) > 3 for r in spec.rounds)  # wider than the depth: a tree
    assert spec.output_ids == generate(tiny, PROMPTS[0], plain(20)).output_ids
