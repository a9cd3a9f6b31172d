"""The EAGLE-1 head (engine/heads/eagle.py): vLLM's file format both ways, a cache that reads in pieces what a full pass
reads at once, and heads that do not fit the target refused with both sides named."""

from __future__ import annotations

import json

import pytest
import torch
from eagle_heads import degenerate_head
from safetensors import safe_open
from safetensors.torch import save_file

from specviz.engine.heads.eagle import HEAD_WEIGHTS, is_eagle_head, load_eagle_head, new_eagle_head, save_eagle_head
from specviz.errors import ModelLoadError


@pytest.fixture(scope="module")
def target(load):
    return load("llama-target").target


def test_save_writes_vllms_eagle1_format_and_load_reads_it_back(target, tmp_path):
    head = new_eagle_head(target, seed=3)
    save_eagle_head(head, tmp_path / "head", dtype=torch.float32)
    config = json.loads((tmp_path / "head" / "config.json").read_text())
    assert config["num_hidden_layers"] == 1
    assert config["architectures"] == ["LlamaForCausalLM"]
    assert (config["hidden_size"], config["vocab_size"]) == (target.config.hidden_size, target.config.vocab_size)
    with safe_open(str(tmp_path / "head" / "model.safetensors"), "pt") as f:
        names = set(f.keys())
    assert names == set(HEAD_WEIGHTS)  # fc + layers.0.*, no input_layernorm, no embedding, no LM head
    assert "layers.0.input_layernorm.weight" not in names and "fc.bias" not in names
    assert is_eagle_head(tmp_path / "head")

    loaded = load_eagle_head(tmp_path / "head", target)
    for name, tensor in head.vllm_state_dict().items():
        torch.testing.assert_close(loaded.state_dict()[name], tensor, rtol=0, atol=0)
    embeds, features = torch.randn(1, 5, 64), torch.randn(1, 5, 64)
    with torch.no_grad():
        torch.testing.assert_close(loaded(embeds, features), head(embeds, features))


def test_a_draft_model_directory_is_not_a_head(model_dirs):
    assert not is_eagle_head(model_dirs["llama-truncated"])
    assert not is_eagle_head(model_dirs["llama-target"].parent / "no-such-head")


def test_reading_pairs_through_the_cache_in_pieces_equals_one_causal_pass(target):
    head = new_eagle_head(target, seed=4).eval()
    embeds, features = torch.randn(1, 9, 64), torch.randn(1, 9, 64)
    with torch.no_grad():
        whole = head(embeds, features)  # (1, 9, H): no cache, causal
        cache = head.new_cache()
        pieces = [head(embeds[:, a:b], features[:, a:b], cache) for a, b in ((0, 4), (4, 5), (5, 9))]
    torch.testing.assert_close(torch.cat(pieces, dim=1), whole, atol=1e-4, rtol=1e-4)
    assert cache.get_seq_length() == 9


def test_the_degenerate_heads_echo_what_they_are_built_to(target):
    embeds, features = torch.randn(1, 4, 64), torch.randn(1, 4, 64)
    with torch.no_grad():
        torch.testing.assert_close(degenerate_head(target, "embedding")(embeds, features), embeds)
        torch.testing.assert_close(degenerate_head(target, "feature")(embeds, features), features)


def test_a_head_for_another_width_or_vocabulary_is_refused_naming_both(load, target, tmp_path):
    other = load("other-vocab").target  # width 64, another tokenizer's vocabulary
    save_eagle_head(new_eagle_head(other), tmp_path / "other")
    with pytest.raises(ModelLoadError) as refused:
        load_eagle_head(tmp_path / "other", target, "the tiny target")
    message = str(refused.value)
    assert f"a vocabulary of {other.config.vocab_size} tokens" in message
    assert f"a vocabulary of {target.config.vocab_size}" in message and "the tiny target" in message

    config = json.loads((tmp_path / "other" / "config.json").read_text())
    config.update(hidden_size=128, vocab_size=target.config.vocab_size)
    (tmp_path / "other" / "config.json").write_text(json.dumps(config))
    with pytest.raises(ModelLoadError, match="built for width 128 .* has width 64"):
        load_eagle_head(tmp_path / "other", target, "the tiny target")


def test_a_head_with_weights_vllm_would_drop_is_refused(target, tmp_path):
    directory = save_eagle_head(new_eagle_head(target), tmp_path / "head")
    with safe_open(str(directory / "model.safetensors"), "pt") as f:
        weights = {name: f.get_tensor(name) for name in f.keys()}
    weights["fc.bias"] = torch.zeros(64)
    save_file(weights, str(directory / "model.safetensors"))
    with pytest.raises(ModelLoadError, match=r"unexpected fc\.bias \(vLLM would drop them silently\)"):
        load_eagle_head(directory, target)
    del weights["fc.bias"], weights["fc.weight"]
    save_file(weights, str(directory / "model.safetensors"))
    with pytest.raises(ModelLoadError, match=r"missing fc\.weight"):
        load_eagle_head(directory, target)
