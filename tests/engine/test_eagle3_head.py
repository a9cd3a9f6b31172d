"""The EAGLE-3 head (engine/heads/eagle3.py): vLLM's file format both ways, a cache that reads in pieces what a full
pass reads at once, a degenerate head that does what it is built to, and heads that do not fit refused with both sides
named."""

from __future__ import annotations

import json

import pytest
import torch
from eagle3_heads import degenerate_head3
from safetensors import safe_open
from safetensors.torch import save_file

from specviz.engine.heads.eagle3 import ARCHITECTURE, HEAD3_WEIGHTS, default_layers, load_head3, new_head3, save_head3
from specviz.errors import ModelLoadError


@pytest.fixture(scope="module")
def target(load):
    return load("llama-target").target


def kept_of(target, step: int = 3) -> torch.Tensor:
    return torch.arange(0, target.config.vocab_size, step)


def test_vllms_default_layers_are_2_half_and_three_from_the_end_sorted():
    assert default_layers(10) == (2, 5, 7)  # the bundled target's: hidden states 2, 5, 7
    assert default_layers(32) == (2, 16, 29)
    assert default_layers(3) == (0, 1, 2)  # vLLM sorts them: (2, 1, 0) read as 0, 1, 2


def test_save_writes_vllms_eagle3_format_and_load_reads_it_back(target, tmp_path):
    kept = kept_of(target)
    head = new_head3(target, kept, seed=3)
    save_head3(head, tmp_path / "head", dtype=torch.float32)
    config = json.loads((tmp_path / "head" / "config.json").read_text())
    assert config["architectures"] == [ARCHITECTURE] and config["num_hidden_layers"] == 1
    assert config["draft_vocab_size"] == len(kept) and config["vocab_size"] == target.config.vocab_size
    assert config["target_hidden_size"] == 64 and config["eagle_aux_hidden_state_layer_ids"] == [0, 1, 2]
    assert config["tie_word_embeddings"] is False
    with safe_open(str(tmp_path / "head" / "model.safetensors"), "pt") as f:
        names = set(f.keys())
        d2t = f.get_tensor("d2t")
        q_proj = f.get_tensor("midlayer.self_attn.q_proj.weight")
    assert names == set(HEAD3_WEIGHTS)  # fc, midlayer.*, norm, lm_head, d2t: no embedding (shared from the target)
    assert d2t.dtype == torch.int64 and torch.equal(torch.arange(len(kept)) + d2t, kept)  # target id = i + d2t[i]
    assert q_proj.shape == (64, 128)  # q reads [norm(emb); norm(h)]: 2H
    assert head.fc.weight.shape == (64, 192)  # fc: 3H -> H

    loaded = load_head3(tmp_path / "head", target)
    for name, tensor in head.vllm_state_dict().items():
        torch.testing.assert_close(loaded.state_dict()[name], tensor, rtol=0, atol=0)
    embeds, hidden = torch.randn(1, 5, 64), torch.randn(1, 5, 64)
    with torch.no_grad():
        for mine, theirs in zip(loaded(embeds, hidden), head(embeds, hidden)):
            torch.testing.assert_close(mine, theirs)


def test_reading_pairs_through_the_cache_in_pieces_equals_one_causal_pass(target):
    head = new_head3(target, kept_of(target), seed=4).eval()
    embeds, hidden = torch.randn(1, 9, 64), torch.randn(1, 9, 64)
    with torch.no_grad():
        whole, _ = head(embeds, hidden)  # (1, 9, H): no cache, causal
        cache = head.new_cache()
        pieces = [head(embeds[:, a:b], hidden[:, a:b], cache)[0] for a, b in ((0, 4), (4, 5), (5, 9))]
    torch.testing.assert_close(torch.cat(pieces, dim=1), whole, atol=1e-4, rtol=1e-4)
    assert cache.get_seq_length() == 9


def test_the_degenerate_head_passes_its_input_through_and_drafts_only_kept_tokens(target):
    kept = kept_of(target)
    head = degenerate_head3(target, kept)
    states = torch.randn(1, 4, 3 * 64)
    embeds = torch.randn(1, 4, 64)
    with torch.no_grad():
        h = head.fuse(states)
        torch.testing.assert_close(h, states[..., :64])  # fc = [I | 0 | 0]
        normed, s = head(embeds, h)
        torch.testing.assert_close(s, h)  # attention and MLP outputs zeroed: s = h, fed back unchanged
        logits = head.target_logits(normed, target.config.vocab_size)  # (1, 4, V')
    assert torch.isinf(logits[..., 1::3]).all() and torch.isfinite(logits[..., kept]).all()  # q = 0 off the vocabulary
    full = target.get_output_embeddings()(target.model.norm(h))
    torch.testing.assert_close(logits[..., kept], full[..., kept])


def test_a_head_for_another_width_or_vocabulary_is_refused_naming_both(load, target, tmp_path):
    other = load("other-vocab").target
    save_head3(new_head3(other, kept_of(other)), tmp_path / "other")
    with pytest.raises(ModelLoadError) as refused:
        load_head3(tmp_path / "other", target, "the tiny target")
    message = str(refused.value)
    assert f"a vocabulary of {other.config.vocab_size} tokens" in message
    assert f"a vocabulary of {target.config.vocab_size}" in message and "the tiny target" in message

    config = json.loads((tmp_path / "other" / "config.json").read_text())
    config.update(target_hidden_size=128, vocab_size=target.config.vocab_size)
    (tmp_path / "other" / "config.json").write_text(json.dumps(config))
    with pytest.raises(ModelLoadError, match="built for width 128 .* has width 64"):
        load_head3(tmp_path / "other", target, "the tiny target")


def test_stray_missing_or_misfit_weights_and_layers_the_target_lacks_are_refused(target, tmp_path):
    directory = save_head3(new_head3(target, kept_of(target)), tmp_path / "head")
    with safe_open(str(directory / "model.safetensors"), "pt") as f:
        weights = {name: f.get_tensor(name) for name in f.keys()}

    def write(**changes):
        save_file({**weights, **changes}, str(directory / "model.safetensors"))

    write(**{"fc.bias": torch.zeros(64)})
    with pytest.raises(ModelLoadError, match=r"unexpected fc\.bias \(vLLM would drop them silently\)"):
        load_head3(directory, target)
    write(d2t=weights["d2t"].to(torch.int32))
    with pytest.raises(ModelLoadError, match="int64 offsets"):
        load_head3(directory, target)
    write(d2t=weights["d2t"] + target.config.vocab_size)
    with pytest.raises(ModelLoadError, match="into the target's vocabulary"):
        load_head3(directory, target)
    write()
    config = json.loads((directory / "config.json").read_text())
    (directory / "config.json").write_text(json.dumps({**config, "eagle_aux_hidden_state_layer_ids": [1, 2, 3]}))
    with pytest.raises(ModelLoadError, match=r"hidden states \[1, 2, 3\], but the target has 3 layers"):
        load_head3(directory, target)
    (directory / "config.json").write_text(json.dumps({**config, "architectures": ["LlamaForCausalLM"]}))
    with pytest.raises(ModelLoadError, match="is not an EAGLE-3 head"):
        load_head3(directory, target)
