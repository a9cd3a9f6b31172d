"""Medusa heads (engine/heads/medusa.py): vLLM's file format both ways, the degenerate heads drafting what they are
built to, and heads that do not fit the target (or that vLLM would load differently) refused with both sides named."""

from __future__ import annotations

import json

import pytest
import torch
from medusa_heads import degenerate_medusa, shifted_drafts
from safetensors import safe_open
from safetensors.torch import save_file

from specviz.engine.heads.eagle import is_eagle_head
from specviz.engine.heads.medusa import MedusaHeads, is_medusa_head, load_medusa, new_medusa, save_medusa
from specviz.errors import ModelLoadError


@pytest.fixture(scope="module")
def target(load):
    return load("llama-target").target


def _random(target, shared: bool, num_heads: int = 4) -> MedusaHeads:
    config = target.config
    torch.manual_seed(3)
    heads = MedusaHeads(config.hidden_size, config.vocab_size, num_heads, shared_lm_head=shared)
    return heads.eval()


@pytest.mark.parametrize("shared", [True, False])
def test_save_writes_vllms_medusa_format_and_load_reads_it_back(target, tmp_path, shared):
    heads = _random(target, shared)
    directory = save_medusa(heads, tmp_path / "medusa", dtype=torch.float32)
    config = json.loads((directory / "config.json").read_text())
    assert config["architectures"] == ["MedusaModel"] and config["model_type"] == "medusa"
    assert (config["num_heads"], config["num_hidden_layers"], config["medusa_fc_bias"]) == (4, 1, True)
    assert (config["hidden_size"], config["vocab_size"]) == (target.config.hidden_size, target.config.vocab_size)
    assert config["original_lm_head"] is shared
    # vLLM's MedusaConfig renames every key holding "num" and "heads" to num_heads: only num_heads may
    assert [key for key in config if "num" in key and "heads" in key] == ["num_heads"]
    with safe_open(str(directory / "model.safetensors"), "pt") as f:
        names = set(f.keys())
    blocks = {f"blocks.{h}.layers.0.{w}" for h in range(4) for w in ("weight", "bias")}
    assert names == blocks | {f"lm_heads.{h}.weight" for h in range(1 if shared else 4)}
    assert is_medusa_head(directory) and not is_eagle_head(directory)

    loaded = load_medusa(directory, target)
    features = torch.randn(3, target.config.hidden_size)
    with torch.no_grad():
        torch.testing.assert_close(loaded(features), heads(features))  # (K, 3, V)
    assert loaded(features, k=2).shape == (2, 3, target.config.vocab_size)


def test_the_degenerate_heads_draft_what_they_are_built_to(target):
    features = torch.randn(5, target.config.hidden_size)
    lm = target.get_output_embeddings().weight[: target.config.vocab_size]
    a = (features @ lm.T).argmax(-1)  # (5,) the target's own argmax at each feature
    with torch.no_grad():
        echo = degenerate_medusa(target, "echo")(features).argmax(-1)  # (K, 5)
        shifted = degenerate_medusa(target, "shifted")(features).argmax(-1)
    assert (echo == a).all()
    for row in range(5):
        assert shifted[:, row].tolist() == shifted_drafts(int(a[row]), 4, target.config.vocab_size)


def test_fresh_heads_start_as_the_targets_next_token_head(target):
    heads = new_medusa(target, 4)
    torch.testing.assert_close(heads.lm_heads[0].weight, target.get_output_embeddings().weight)
    features = torch.randn(2, target.config.hidden_size)
    with torch.no_grad():
        torch.testing.assert_close(heads(features)[3], target.get_output_embeddings()(features))


def test_heads_for_another_width_or_vocabulary_are_refused_naming_both(load, target, tmp_path):
    other = load("other-vocab").target
    save_medusa(new_medusa(other), tmp_path / "other")
    with pytest.raises(ModelLoadError) as refused:
        load_medusa(tmp_path / "other", target, "the tiny target")
    message = str(refused.value)
    assert f"a vocabulary of {other.config.vocab_size} tokens" in message
    assert f"a vocabulary of {target.config.vocab_size}" in message and "the tiny target" in message

    config = json.loads((tmp_path / "other" / "config.json").read_text())
    config.update(hidden_size=128, vocab_size=target.config.vocab_size)
    (tmp_path / "other" / "config.json").write_text(json.dumps(config))
    with pytest.raises(ModelLoadError, match="Medusa head .* built for width 128 .* has width 64"):
        load_medusa(tmp_path / "other", target, "the tiny target")


def test_heads_with_weights_vllm_would_drop_or_miss_are_refused(target, tmp_path):
    directory = save_medusa(new_medusa(target), tmp_path / "medusa")
    with safe_open(str(directory / "model.safetensors"), "pt") as f:
        weights = {name: f.get_tensor(name) for name in f.keys()}
    weights["lm_heads.1.weight"] = weights["lm_heads.0.weight"].clone()  # original_lm_head: vLLM reads lm_heads.0 only
    save_file(weights, str(directory / "model.safetensors"))
    with pytest.raises(ModelLoadError, match=r"unexpected lm_heads\.1\.weight \(vLLM would drop them silently\)"):
        load_medusa(directory, target)
    del weights["lm_heads.1.weight"], weights["blocks.3.layers.0.bias"]
    save_file(weights, str(directory / "model.safetensors"))
    with pytest.raises(ModelLoadError, match=r"missing blocks\.3\.layers\.0\.bias"):
        load_medusa(directory, target)


@pytest.mark.parametrize(
    "change, message",
    [
        ({"truncated_vocab_size": 16}, "truncated vocabulary of 16 tokens"),
        ({"medusa_fc_bias": False}, "medusa_fc_bias: true"),
        ({"num_heads": 0}, "num_heads 0"),
        ({"num_heads": 3}, "unexpected blocks.3"),  # the file holds 4 heads, the config says 3
    ],
)
def test_configs_vllm_would_read_differently_are_refused(target, tmp_path, change, message):
    directory = save_medusa(new_medusa(target), tmp_path / "medusa")
    config = json.loads((directory / "config.json").read_text())
    (directory / "config.json").write_text(json.dumps({**config, **change}))
    with pytest.raises(ModelLoadError, match=message.replace(".", r"\.")):
        load_medusa(directory, target)


def test_an_eagle_head_or_a_model_is_not_a_medusa_head(model_dirs, tmp_path):
    assert not is_medusa_head(model_dirs["llama-target"])
    assert not is_medusa_head(tmp_path / "nothing")
    with pytest.raises(ModelLoadError, match="not a Medusa head directory"):
        load_medusa(tmp_path / "nothing", None)
