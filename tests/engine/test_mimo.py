"""The MiMoForCausalLM re-export of the bundled target and its MTP module (engine/heads/mimo.py), offline: the target
part is the Llama target's function (loaded with transformers' Qwen2ForCausalLM, as MiMo is Qwen2), the MTP part lands
under the names vLLM 0.32's mimo_mtp.py loads, and the folded norms are exact where the docstring says so and off only
in scale where it says not."""

from __future__ import annotations

import json
import shutil

import pytest
import torch
from safetensors import safe_open
from transformers import LlamaForCausalLM, Qwen2ForCausalLM

from specviz import methods
from specviz.engine.heads.eagle import read_weights
from specviz.engine.heads.mimo import ARCHITECTURE, MTP_PREFIX, export_mimo
from specviz.engine.loading.models import BUNDLED_PAIR, BUNDLED_TARGET
from specviz.errors import ModelLoadError

MTP_DIR = BUNDLED_PAIR / methods.get(methods.MTP).head.beside
BUNDLED_TARGET_DIR = BUNDLED_PAIR / "target"
EPS = 1e-5  # the bundled pair's rms_norm_eps
# MiMoMultiTokenPredictorLayer's parameters in vLLM 0.32 (mimo_mtp.py), before q/k/v and gate/up are stacked
VLLM_MTP_LAYER = {
    "token_layernorm.weight",
    "hidden_layernorm.weight",
    "input_proj.weight",
    "final_layernorm.weight",
    "mtp_block.input_layernorm.weight",
    "mtp_block.post_attention_layernorm.weight",
    *(f"mtp_block.self_attn.{p}_proj.{w}" for p in "qkv" for w in ("weight", "bias")),
    "mtp_block.self_attn.o_proj.weight",
    *(f"mtp_block.mlp.{p}_proj.weight" for p in ("gate", "up", "down")),
}


def vllm_name(name: str) -> str:
    """A checkpoint name as MiMoMTP.hf_to_vllm_mapper rewrites it (its orig_to_new_substr)."""
    for part in ("self_attn", "mlp", "input_layernorm", "post_attention_layernorm"):
        name = name.replace(f".{part}.", f".mtp_block.{part}.")
    return name


def rmsnorm(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """(N, H) RMSNorm as vLLM and transformers compute it."""
    return w * x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS)


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    return export_mimo(BUNDLED_TARGET, MTP_DIR, tmp_path_factory.mktemp("mimo") / "out")


@pytest.fixture(scope="module")
def weights(exported):
    return read_weights(exported)


@pytest.fixture(scope="module")
def source():
    """The shipped target's and module's weights, float32: (target, module)."""
    as_float = lambda d: {k: v.float() for k, v in d.items()}  # noqa: E731
    return as_float(read_weights(BUNDLED_TARGET_DIR)), as_float(read_weights(MTP_DIR))


def test_the_export_is_a_mimo_config_with_one_mtp_layer_and_no_tokenizer(exported):
    config = json.loads((exported / "config.json").read_text())
    assert config["architectures"] == [ARCHITECTURE] and config["model_type"] == "qwen2"
    assert config["num_nextn_predict_layers"] == 1 and config["num_hidden_layers"] == 10
    assert config["tie_word_embeddings"] is False  # the head is folded, no longer the embedding
    # a generic tokenizer.json beside a qwen2 config loads as Qwen2's and splits differently: the server takes the
    # target's (--tokenizer), so none is written here
    assert not (exported / "tokenizer.json").exists() and (exported / "generation_config.json").is_file()


def test_the_exported_target_loaded_as_qwen2_gives_the_llama_targets_logits(exported):
    ids = torch.randint(2, 8192, (2, 48), generator=torch.Generator().manual_seed(0))  # (2, 48)
    llama = LlamaForCausalLM.from_pretrained(BUNDLED_TARGET, dtype=torch.float32).eval()
    qwen = Qwen2ForCausalLM.from_pretrained(exported, dtype=torch.float32).eval()  # drops model.mtp_layers.*
    assert all(not b.any() for n, b in qwen.named_parameters() if n.endswith("_proj.bias"))  # zero, not random
    with torch.no_grad():
        a, b = llama(ids).logits, qwen(ids).logits  # (2, 48, V)
    assert (a - b).abs().max().item() < 1e-5 * a.abs().max().item()  # float32 rounding of the folded head and norm
    assert torch.equal(a.argmax(-1), b.argmax(-1))


def test_the_mtp_weights_land_under_the_names_vllms_mimo_mtp_loads(weights):
    mtp = {name for name in weights if "mtp_layers" in name}
    assert all(name.startswith(MTP_PREFIX) for name in mtp)
    assert {vllm_name(name).removeprefix(MTP_PREFIX) for name in mtp} == VLLM_MTP_LAYER
    # the rest is the target MiMoForCausalLM loads (it drops model.mtp_layers.*): Qwen2's names, a head of its own
    target = set(weights) - mtp
    assert {"model.embed_tokens.weight", "model.norm.weight", "lm_head.weight"} <= target
    assert {f"model.layers.{i}.self_attn.{p}_proj.bias" for i in range(10) for p in "qkv"} <= target


def test_the_block_and_the_concatenation_are_the_modules_own(weights, source):
    _, module = source
    eh = module["eh_proj.weight"]  # (H, 2H), specviz: [enorm(emb) | hnorm(h)]
    e, f = torch.randn(2, 5, 256, generator=torch.Generator().manual_seed(1))
    proj = weights[MTP_PREFIX + "input_proj.weight"]  # MiMo: [hidden_layernorm(h) | token_layernorm(emb)]
    assert torch.allclose(torch.cat([f, e], -1) @ proj.T, torch.cat([e, f], -1) @ eh.T, atol=1e-6)
    assert torch.equal(weights[MTP_PREFIX + "mlp.down_proj.weight"], module["mtp_block.mlp.down_proj.weight"])
    assert torch.equal(weights[MTP_PREFIX + "token_layernorm.weight"], module["enorm.weight"])


def test_the_mtp_layers_logits_are_exact_and_its_feature_inputs_right_in_direction(weights, source):
    target, module = source
    w_f, w_s, w_h = target["model.norm.weight"], module["shared_head.norm.weight"], module["hnorm.weight"]
    final, hidden = weights[MTP_PREFIX + "final_layernorm.weight"], weights[MTP_PREFIX + "hidden_layernorm.weight"]
    h = 3 * torch.randn(256, 256, generator=torch.Generator().manual_seed(2))  # (N, H) residual streams, h'
    # logits: vLLM's lm_head(final_layernorm(h')) is specviz's E (shared_head.norm(h'))
    want = rmsnorm(h, w_s) @ target["model.embed_tokens.weight"].T  # (N, V)
    assert torch.allclose(rmsnorm(h, final) @ weights["lm_head.weight"].T, want, rtol=1e-4, atol=1e-4)
    cos = torch.nn.functional.cosine_similarity
    # depth >= 2: vLLM feeds hidden_layernorm(final_layernorm(h')), specviz hnorm(h'): same direction, scale off by
    # 1 / (rms(w_f) rms(n(h') / w_f)), about 1 / 1.018 for these rows
    served, own = rmsnorm(rmsnorm(h, final), hidden), rmsnorm(h, w_h)
    assert cos(served, own).min().item() > 1 - 1e-5
    ratio = served.norm(dim=-1) / own.norm(dim=-1)
    assert 0.95 < ratio.min().item() and ratio.max().item() < 1.05  # a few %, not exact
    # depth 1: vLLM feeds hidden_layernorm(h), specviz hnorm(n(w_f h) w_f): same direction, scale a few % off
    served, own = rmsnorm(h, hidden), rmsnorm(rmsnorm(h, w_f), w_h)
    assert cos(served, own).min().item() > 1 - 1e-5
    ratio = served.norm(dim=-1) / own.norm(dim=-1)
    assert 0.9 < ratio.min().item() < 1.0 < ratio.max().item() < 1.1  # not exact: rms(w_f n(h)) / rms(w_f) per row


def test_a_target_mimo_cannot_compute_and_a_directory_without_a_module_are_refused(tmp_path):
    biased = tmp_path / "biased"
    biased.mkdir()
    config = json.loads((BUNDLED_TARGET_DIR / "config.json").read_text())
    (biased / "config.json").write_text(json.dumps({**config, "attention_bias": True, "head_dim": 32}))
    shutil.copyfile(BUNDLED_TARGET_DIR / "model.safetensors", biased / "model.safetensors")
    with pytest.raises(ModelLoadError, match="attention_bias must be false.*head_dim must be"):
        export_mimo(biased, MTP_DIR, tmp_path / "out")
    with pytest.raises(ModelLoadError, match="is not an MTP module"):
        export_mimo(BUNDLED_TARGET, BUNDLED_PAIR / "eagle", tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_the_safetensors_hold_float32(exported):
    with safe_open(str(exported / "model.safetensors"), "pt") as f:
        assert {f.get_tensor(name).dtype for name in f.keys()} == {torch.float32}
