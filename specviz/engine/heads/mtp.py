"""One MTP module (multi-token prediction, DeepSeek-V3 style), trained post hoc on the frozen target.

DeepSeek-V3 (arXiv 2412.19437, section 2.2; vLLM `model_executor/models/deepseek_mtp.py`): module k reads the
previous depth's hidden state h and the embedding of the token k ahead, each through its own RMSNorm, and

    h' = block(eh_proj([enorm(emb(x_{t+1})); hnorm(h_t)]))    one full decoder block (input norm included)
    q(x_{t+2}) from lm_head(shared_head.norm(h'))              the target's frozen LM head, after the module's norm

The embedding and the LM head are the target's, shared and never copied. One module serves every depth (as vLLM
chains a model's single MTP layer for num_speculative_tokens > 1): the first draft of a round reads the target's
real feature of the last committed row (its last hidden state, after its final norm), each later one the module's
own output h'. Post hoc on a frozen target this is EAGLE-1 (engine/heads/eagle.py) plus the two input norms, the block's
own input norm and an output norm, trained with the cross-entropy against the target alone (DeepSeek's MTP loss; no
feature regression): the drafter, the trees and the caches are EAGLE-1's (engine/proposers/mtp.py).

Files (docs/engine.md): `config.json` = the target's Llama config with `num_hidden_layers: 1`,
`num_nextn_predict_layers: 1` and architectures ["SpecvizMTP"]; `model.safetensors` = `enorm.weight`,
`hnorm.weight`, `eh_proj.weight`, `mtp_block.*` (a Llama decoder layer, input_layernorm included) and
`shared_head.norm.weight` (DeepSeek's names in vLLM, less the shared embedding and head). vLLM serves MTP only for
models that declare MTP layers: engine/heads/mimo.py re-exports the target as MiMoForCausalLM with this module as its
MTP layer (logits exact, the feature input exact in direction, not in scale), and tests/remote/test_vllm_mtp.py checks
that server's texts and steps against specviz's."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import TYPE_CHECKING

import torch
from safetensors.torch import save_file
from torch import nn
from transformers import DynamicCache, LlamaConfig, PreTrainedModel
from transformers.models.llama.modeling_llama import LlamaDecoderLayer, LlamaRMSNorm, LlamaRotaryEmbedding

from specviz.engine.heads.eagle import (
    LAYER_WEIGHTS,
    WEIGHTS,
    cached_causal_mask,
    check_fits,
    check_weight_names,
    place_head,
    read_head_config,
    read_weights,
)
from specviz.errors import ModelLoadError

if TYPE_CHECKING:
    from specviz.engine.heads.lean_heads import HeadParts

ARCHITECTURE = "SpecvizMTP"
WHAT = "MTP module"
MTP_WEIGHTS = (
    "enorm.weight",
    "hnorm.weight",
    "eh_proj.weight",
    "mtp_block.input_layernorm.weight",
    *(f"mtp_block.{name}" for name in LAYER_WEIGHTS),
    "shared_head.norm.weight",
)


class SharedHead(nn.Module):
    """The module's output norm; the LM head it feeds is the target's (shared, not held here)."""

    def __init__(self, config: LlamaConfig):
        super().__init__()
        self.norm = LlamaRMSNorm(config.hidden_size, eps=config.rms_norm_eps)


class MtpModule(nn.Module):
    """eh_proj([enorm(emb); hnorm(h)]) -> one decoder block -> h' (the next depth's h); shared_head.norm(h') feeds
    the target's LM head. A KV cache per run, as EAGLE-1's head."""

    def __init__(self, config: LlamaConfig):
        super().__init__()
        config = copy.deepcopy(config)
        config.num_hidden_layers = 1
        config._attn_implementation = "sdpa"
        self.config = config
        width, eps = config.hidden_size, config.rms_norm_eps
        self.enorm = LlamaRMSNorm(width, eps=eps)
        self.hnorm = LlamaRMSNorm(width, eps=eps)
        self.eh_proj = nn.Linear(2 * width, width, bias=False)
        self.mtp_block = LlamaDecoderLayer(config, layer_idx=0)
        self.shared_head = SharedHead(config)
        self.rotary_emb = LlamaRotaryEmbedding(config)

    def new_cache(self) -> DynamicCache:
        return DynamicCache(config=self.config)

    def forward(
        self,
        embeds: torch.Tensor,
        features: torch.Tensor,
        cache: DynamicCache | None = None,
        positions: torch.Tensor | None = None,
        mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """embeds (B, T, H) of tokens x_{t+1}, features (B, T, H) h_t -> (B, T, H) h'_{t+1}, before the output
        norm (EagleHead.forward's contract: positions and masks alike)."""
        past = cache.get_seq_length() if cache is not None else 0
        n = embeds.shape[1]
        if positions is None:
            positions = torch.arange(past, past + n, device=embeds.device)[None]  # (1, T)
            mask = cached_causal_mask(past, n, embeds.dtype, embeds.device) if cache is not None else None
        hidden = self.eh_proj(torch.cat([self.enorm(embeds), self.hnorm(features)], dim=-1))  # (B, T, H)
        return self.mtp_block(
            hidden,
            attention_mask=mask,
            position_ids=positions,
            cache=cache,
            use_cache=cache is not None,
            position_embeddings=self.rotary_emb(hidden, positions),
        )

    def normed(self, h: torch.Tensor) -> torch.Tensor:
        """(..., H) what the shared LM head reads: the module's output norm of h'."""
        return self.shared_head.norm(h)

    def lean_parts(self) -> HeadParts:
        """Its lean step (engine/heads/lean_heads.py): eh_proj over [enorm(e); hnorm(h)] into its block; logits read its
        output norm before the target's LM head."""
        from specviz.engine.heads.lean_heads import HeadParts

        return HeadParts(
            self.mtp_block,
            self.eh_proj,
            emb_norm=self.enorm.weight,
            state_norm=self.hnorm.weight,
            final_norm=self.shared_head.norm.weight,
            norms_output=True,
        )

    def saved_state_dict(self) -> dict[str, torch.Tensor]:
        return {name: tensor for name, tensor in self.state_dict().items() if name in MTP_WEIGHTS}


def new_mtp(target: PreTrainedModel, seed: int = 0) -> MtpModule:
    """A freshly initialised module for this target (Llama's initialisation, norms at 1), in its dtype and device."""
    torch.manual_seed(seed)
    config = copy.deepcopy(target.config)
    config.num_hidden_layers = 1
    module = MtpModule(config)
    std = target.config.initializer_range
    for sub in module.modules():
        if isinstance(sub, nn.Linear):
            nn.init.normal_(sub.weight, std=std)
    return module.to(device=target.device, dtype=target.dtype)


def save_mtp(module: MtpModule, directory: str | Path, dtype: torch.dtype = torch.bfloat16) -> Path:
    """Write the module: config.json (the target's config, one layer, one MTP layer) + model.safetensors."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    config = module.config.to_dict()
    config.update(
        num_hidden_layers=1,
        num_nextn_predict_layers=1,
        architectures=[ARCHITECTURE],
        dtype=str(dtype).removeprefix("torch."),
    )
    for key in ("_attn_implementation_autoset", "attn_implementation"):
        config.pop(key, None)
    (out / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    weights = {name: t.detach().to("cpu", dtype).contiguous() for name, t in module.saved_state_dict().items()}
    save_file(weights, str(out / WEIGHTS), metadata={"format": "pt"})
    return out


def is_mtp(directory: str | Path) -> bool:
    """Whether a directory holds an MTP module: its config names SpecvizMTP, beside the weights."""
    path = Path(directory)
    if not (path / "config.json").is_file() or not (path / WEIGHTS).is_file():
        return False
    try:
        return ARCHITECTURE in json.loads((path / "config.json").read_text(encoding="utf-8")).get("architectures", [])
    except (OSError, ValueError, AttributeError):
        return False


def load_mtp(directory: str | Path, target: PreTrainedModel, target_name: str = "the target") -> MtpModule:
    """Load an MTP module for `target`, on its device and dtype; refuse one of another width or vocabulary, and one
    with missing or unexpected weights."""
    path = Path(directory).expanduser()
    saved = read_head_config(path, "an MTP module", "enorm, hnorm, eh_proj, mtp_block.* and shared_head.norm")
    if ARCHITECTURE not in saved.get("architectures", []):
        raise ModelLoadError(
            f"{str(path)!r} is not an MTP module: its config.json names architectures "
            f"{saved.get('architectures')!r}, not [{ARCHITECTURE!r}] (`python -m specviz train-tiny mtp` writes one)."
        )
    check_fits(path, WHAT, saved, target, target_name)
    weights = read_weights(path)
    check_weight_names(path, WHAT, "an MTP module's", weights, MTP_WEIGHTS)
    try:
        module = MtpModule(LlamaConfig.from_dict({**saved, "architectures": ["LlamaForCausalLM"]}))
    except (TypeError, ValueError, KeyError) as exc:
        raise ModelLoadError(f"The MTP module's config.json in {str(path)!r} is not a Llama config: {exc}") from None
    return place_head(module, weights, path, WHAT, target, target_name)
