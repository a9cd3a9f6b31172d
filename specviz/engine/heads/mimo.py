"""Re-export a Llama target and its MTP module (engine/heads/mtp.py) as one MiMoForCausalLM checkpoint, the route by
which vLLM serves MTP for a model that was not trained with MTP layers (`--speculative-config {"method": "mtp", ...}`).

vLLM 0.32 (`model_executor/models/mimo.py`, `mimo_mtp.py`): MiMo is Qwen2 (q/k/v biases, here zero) whose forward
returns the residual stream *before* its final norm (the norm is applied in compute_logits), and its one MTP layer is

    h' = mtp_block(input_proj([hidden_layernorm(h); token_layernorm(emb(x) masked to 0 at position 0)]))
    out = final_layernorm(h')      q = softmax(lm_head(out))      the next depth reads out, not h'

where specviz's module (DeepSeek's order and norms) reads the target's feature *after* its final norm, puts the
embedding's half first, applies its own output norm only for the logits and chains the un-normed h'. Folded here
(n(x) = x / rms(x); w_f the target's final norm, w_s the module's shared_head.norm, w_h its hnorm):

    input_proj        = eh_proj with its two halves swapped                                       exact
    lm_head           = E * (w_s * w_f) per column, final norm = 1 / w_s, untied        target's logits exact
    final_layernorm   = 1 / w_f: lm_head(out) = E (w_s * n(h'))                             MTP's logits exact
    hidden_layernorm  = w_h * w_f / rms(w_f)                                   depth >= 2: n(n(h')/w_f) * w_f

The two norm inputs are right in direction, not in scale: hnorm(n(w_f * n(h))) needs a per-token rms(w_f * n(h)), a
diagonal RMSNorm of the raw h cannot give it, so depth 1 (and every KV row the module writes from the target's
features) has its hidden half scaled by rms(w_f * n(h)) / rms(w_f) against the embedding's half; depth >= 2 by
1 / (rms(w_f) * rms(n(h') / w_f)). Both are 1 when w_f is constant (the bundled target's: rms(w_f) * rms(1/w_f) =
1.018). vLLM's zeroed embedding at position 0 changes the module's KV row 0 only. Pure file writing: no model runs.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import torch
from safetensors.torch import save_file

from specviz.engine.heads.eagle import LAYER_WEIGHTS, WEIGHTS, read_weights
from specviz.engine.heads.mtp import is_mtp
from specviz.errors import ModelLoadError

ARCHITECTURE = "MiMoForCausalLM"
EXPORT_VERSION = 1  # bump when what is written changes: remote/launch.py's cached exports are keyed on it
MTP_PREFIX = "model.mtp_layers.0."  # vLLM maps it onto its layer index and adds the `mtp_block.` wrapper itself
BIASED = ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj")  # Qwen2's (and so MiMo's) biased projections
# no tokenizer files: with model_type qwen2, transformers 5 loads a generic tokenizer.json as Qwen2's, which splits
# text differently (seen: "def add(a, b)" in 13 tokens, not 12); the server takes the target's (--tokenizer)
COPIED = ("generation_config.json",)
NOTE = "export.json"  # what was folded, from which files: for people, vLLM never reads it
SMALLEST_NORM = 1e-3  # a norm weight below this (in size) cannot be divided out


def export_mimo(target_dir: str | Path, mtp_dir: str | Path, out_dir: str | Path) -> Path:
    """Write target + MTP module as a MiMoForCausalLM directory (config.json, float32 model.safetensors,
    export.json; no tokenizer: serve it with the target's, --tokenizer TARGET) that vLLM serves with
    {"method": "mtp"}; returns out_dir."""
    target, mtp, out = Path(target_dir).expanduser(), Path(mtp_dir).expanduser(), Path(out_dir).expanduser()
    config = read_llama_config(target)
    if not is_mtp(mtp):
        raise ModelLoadError(
            f"{str(mtp)!r} is not an MTP module (config.json naming SpecvizMTP beside {WEIGHTS}): "
            "`python -m specviz train-tiny mtp` writes one."
        )
    module_config = json.loads((mtp / "config.json").read_text(encoding="utf-8"))
    for key in ("hidden_size", "vocab_size", "intermediate_size", "num_attention_heads", "num_key_value_heads"):
        if module_config.get(key) != config.get(key):
            raise ModelLoadError(
                f"The MTP module in {str(mtp)!r} does not fit the target in {str(target)!r}: its {key} is "
                f"{module_config.get(key)!r}, the target's {config.get(key)!r}."
            )
    weights = target_weights(read_weights(target), int(config["num_hidden_layers"]), target)
    module = read_weights(mtp)
    w_f = fold_norms(weights, module, target, mtp)
    weights.update(mtp_weights(module, w_f))
    out.mkdir(parents=True, exist_ok=True)
    save_file({k: v.contiguous() for k, v in weights.items()}, str(out / WEIGHTS), metadata={"format": "pt"})
    (out / "config.json").write_text(json.dumps(mimo_config(config), indent=2, sort_keys=True) + "\n")
    for name in COPIED:
        if (target / name).is_file():
            shutil.copyfile(target / name, out / name)
    (out / NOTE).write_text(json.dumps(export_note(target, mtp, w_f), indent=2) + "\n")
    return out


def read_llama_config(target: Path) -> dict:
    """The target's config.json, refused unless MiMo (Qwen2 with zero biases) can compute the same function."""
    path = target / "config.json"
    if not path.is_file() or not (target / WEIGHTS).is_file():
        raise ModelLoadError(f"{str(target)!r} is not a model directory: it needs config.json and {WEIGHTS}.")
    config = json.loads(path.read_text(encoding="utf-8"))
    heads = int(config.get("num_attention_heads", 0)) or 1
    refusals = [
        ("model_type", config.get("model_type") == "llama", "llama"),
        ("attention_bias", not config.get("attention_bias", False), "false"),
        ("mlp_bias", not config.get("mlp_bias", False), "false"),
        ("hidden_act", config.get("hidden_act", "silu") == "silu", "silu"),
        ("head_dim", config.get("head_dim", config["hidden_size"] // heads) == config["hidden_size"] // heads,
         "hidden_size / num_attention_heads (vLLM's Qwen2 derives it)"),
        ("rope_parameters", rope_of(config).get("rope_type", "default") == "default", "the default rope"),
    ]  # fmt: skip
    wrong = [f"{key} must be {want}, not {config.get(key)!r}" for key, ok, want in refusals if not ok]
    if wrong:
        what = f"The target in {str(target)!r} cannot be re-exported as {ARCHITECTURE}"
        raise ModelLoadError(f"{what}: " + "; ".join(wrong) + ".")
    return config


def rope_of(config: dict) -> dict:
    """The rope parameters, in transformers 5's form, from either form of a Llama config."""
    return config.get("rope_parameters") or {"rope_type": "default", "rope_theta": config.get("rope_theta", 10000.0)}


def mimo_config(config: dict) -> dict:
    """The Qwen2 config vLLM reads as MiMo: same sizes, full attention everywhere, untied head, one MTP layer."""
    layers = int(config["num_hidden_layers"])
    keep = ("vocab_size", "hidden_size", "intermediate_size", "num_attention_heads", "max_position_embeddings")
    return {
        **{key: config[key] for key in keep},
        "architectures": [ARCHITECTURE],
        "model_type": "qwen2",
        "num_hidden_layers": layers,
        "num_key_value_heads": config.get("num_key_value_heads", config["num_attention_heads"]),
        "hidden_act": "silu",
        "rms_norm_eps": config.get("rms_norm_eps", 1e-6),
        "rope_parameters": rope_of(config),
        "tie_word_embeddings": False,  # the head is folded (E * w_s * w_f), no longer the embedding
        "use_sliding_window": False,
        "sliding_window": None,
        "max_window_layers": layers,
        "layer_types": ["full_attention"] * layers,
        "attention_dropout": 0.0,
        "initializer_range": config.get("initializer_range", 0.02),
        "bos_token_id": config.get("bos_token_id"),
        "eos_token_id": config.get("eos_token_id"),
        "pad_token_id": config.get("pad_token_id"),
        "num_nextn_predict_layers": 1,
        "dtype": "float32",
    }


def target_weights(weights: dict[str, torch.Tensor], layers: int, target: Path) -> dict[str, torch.Tensor]:
    """The target's weights in float32 under the same names (Qwen2's are Llama's), zero q/k/v biases added and the
    LM head written out (the tied embedding) so that fold_norms can scale it."""
    out = {name: t.to(torch.float32) for name, t in weights.items() if not name.endswith("rotary_emb.inv_freq")}
    if "model.embed_tokens.weight" not in out or "model.norm.weight" not in out:
        raise ModelLoadError(f"The target's {WEIGHTS} in {str(target)!r} has no model.embed_tokens or model.norm.")
    out.setdefault("lm_head.weight", out["model.embed_tokens.weight"].clone())
    for i in range(layers):
        for proj in BIASED:
            out[f"model.layers.{i}.{proj}.bias"] = torch.zeros(out[f"model.layers.{i}.{proj}.weight"].shape[0])
    return out


def fold_norms(
    weights: dict[str, torch.Tensor], module: dict[str, torch.Tensor], target: Path, mtp: Path
) -> torch.Tensor:
    """Fold w_s * w_f into the LM head and 1 / w_s into the final norm (in place): the target's logits unchanged, and
    the MTP layer's final_layernorm can be 1 / w_f. Returns the target's own final norm w_f (H,)."""
    w_f = weights["model.norm.weight"]  # (H,)
    w_s = module["shared_head.norm.weight"].to(torch.float32)  # (H,)
    for name, w, where in (("model.norm.weight", w_f, target), ("shared_head.norm.weight", w_s, mtp)):
        if w.abs().min().item() < SMALLEST_NORM:
            raise ModelLoadError(
                f"{name} in {str(where)!r} has an entry of size below {SMALLEST_NORM}: the re-export divides by it "
                "(MiMo's norms are placed differently from this module's), so it cannot be folded."
            )
    weights["lm_head.weight"] = weights["lm_head.weight"] * (w_s * w_f)[None, :]  # (V, H)
    weights["model.norm.weight"] = 1.0 / w_s
    return w_f


def mtp_weights(module: dict[str, torch.Tensor], w_f: torch.Tensor) -> dict[str, torch.Tensor]:
    """The module's weights under MiMo's names (model.mtp_layers.0.*, the block's without its `mtp_block.`), norms
    folded as the module docstring says; w_f (H,) the target's final norm."""
    m = {name: t.to(torch.float32) for name, t in module.items()}
    eh = m["eh_proj.weight"]  # (H, 2H): [embedding half | feature half]
    width = eh.shape[0]
    out = {
        "token_layernorm.weight": m["enorm.weight"],
        "hidden_layernorm.weight": m["hnorm.weight"] * w_f / rms(w_f),
        "input_proj.weight": torch.cat([eh[:, width:], eh[:, :width]], dim=1),  # (H, 2H): MiMo's [feature | emb]
        "final_layernorm.weight": 1.0 / w_f,
        "input_layernorm.weight": m["mtp_block.input_layernorm.weight"],
        **{name: m[f"mtp_block.{name}"] for name in LAYER_WEIGHTS},
        **{f"{proj}.bias": torch.zeros(m[f"mtp_block.{proj}.weight"].shape[0]) for proj in BIASED},
    }
    return {MTP_PREFIX + name: t for name, t in out.items()}


def rms(w: torch.Tensor) -> float:
    return w.pow(2).mean().sqrt().item()


def export_note(target: Path, mtp: Path, w_f: torch.Tensor) -> dict:
    return {
        "what": f"{ARCHITECTURE} re-export of a Llama target and a specviz MTP module (specviz/engine/heads/mimo.py)",
        "target": str(target),
        "mtp": str(mtp),
        "rms_final_norm": rms(w_f),
        "rms_final_norm_times_rms_inverse": rms(w_f) * rms(1.0 / w_f),  # 1 when depth >= 2's scale is exact
        "folded": "lm_head = E*w_s*w_f, norm = 1/w_s, final_layernorm = 1/w_f, hidden_layernorm = w_h*w_f/rms(w_f)",
    }
