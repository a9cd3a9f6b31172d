"""Feature heads: a small module that drafts from the target's own hidden states instead of from a second model.

EAGLE-1 (Li et al. 2024; SafeAILab/EAGLE `eagle/model/cnets1.py`, vLLM `model_executor/models/llama_eagle.py`):

    g_{t+1} = layer(fc([emb(x_{t+1}); f_t]))    f_t: the target's feature at row t, after its final norm (H)
    q(x_{t+2}) from lm_head(g_{t+1})             the target's own frozen LM head on the predicted feature

`fc` is 2H -> H without bias; `layer` is one Llama decoder layer without its input norm (fc's output goes straight
in, as in EAGLE and vLLM) and there is no final norm: the head is trained to predict the post-norm feature itself.
The embedding and the LM head are the target's, shared and never copied. Drafting k tokens: the first step reads
the target's real features of the committed rows, every later step reads the head's own prediction g (the heart of
EAGLE: features, not tokens, are what is extrapolated).

Files (vLLM's EAGLE-1 format, loaded there with {"method": "eagle", "model": DIR}): `config.json` = the target's
Llama config with `num_hidden_layers: 1`; `model.safetensors` = `fc.weight` and `layers.0.*` without
`input_layernorm`. vLLM drops weights it does not expect without a word, so loading refuses any stray one.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import TYPE_CHECKING

import torch
from safetensors import safe_open
from safetensors.torch import save_file
from torch import nn
from transformers import DynamicCache, LlamaConfig, PreTrainedModel
from transformers.models.llama.modeling_llama import LlamaDecoderLayer, LlamaRotaryEmbedding

from specviz.engine.forward.masks import causal_mask
from specviz.errors import ModelLoadError

if TYPE_CHECKING:
    from specviz.engine.heads.lean_heads import HeadParts

WEIGHTS = "model.safetensors"
LAYER_WEIGHTS = (
    "self_attn.q_proj.weight",
    "self_attn.k_proj.weight",
    "self_attn.v_proj.weight",
    "self_attn.o_proj.weight",
    "mlp.gate_proj.weight",
    "mlp.up_proj.weight",
    "mlp.down_proj.weight",
    "post_attention_layernorm.weight",
)
HEAD_WEIGHTS = ("fc.weight", *(f"layers.0.{name}" for name in LAYER_WEIGHTS))


class EagleHead(nn.Module):
    """fc([emb; f]) -> one decoder layer (no input norm) -> the predicted next feature; a KV cache per run."""

    def __init__(self, config: LlamaConfig):
        super().__init__()
        config = copy.deepcopy(config)
        config.num_hidden_layers = 1
        config.architectures = ["LlamaForCausalLM"]
        config._attn_implementation = "sdpa"
        self.config = config
        width = config.hidden_size
        self.fc = nn.Linear(2 * width, width, bias=False)
        self.layers = nn.ModuleList([LlamaDecoderLayer(config, layer_idx=0)])
        self.layers[0].input_layernorm = nn.Identity()  # EAGLE: fc's output enters the layer unnormalised
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
        """embeds (B, T, H) of tokens x_{t+1}, features (B, T, H) f_t -> (B, T, H) predicted features g_{t+1}.

        Pair t sits at position t (as in vLLM: the target's position of f_t); with a cache, the pairs continue after
        the ones it holds. Without one the T pairs attend causally among themselves (training). A draft tree passes
        its own positions (1, T) and additive mask (1, 1, T, cached + T): each node sees the cache and its ancestors."""
        past = cache.get_seq_length() if cache is not None else 0
        n = embeds.shape[1]
        if positions is None:
            positions = torch.arange(past, past + n, device=embeds.device)[None]  # (1, T)
            mask = cached_causal_mask(past, n, embeds.dtype, embeds.device) if cache is not None else None
        hidden = self.fc(torch.cat([embeds, features], dim=-1))  # (B, T, H)
        return self.layers[0](
            hidden,
            attention_mask=mask,
            position_ids=positions,
            cache=cache,
            use_cache=cache is not None,
            position_embeddings=self.rotary_emb(hidden, positions),
        )

    def lean_parts(self) -> HeadParts:
        """Its lean step (engine/heads/lean_heads.py): fc over [e; f] enters its one layer as it is; the target's LM
        head."""
        from specviz.engine.heads.lean_heads import HeadParts

        return HeadParts(self.layers[0], self.fc, emb_norm=None, state_norm=None, final_norm=None)

    def vllm_state_dict(self) -> dict[str, torch.Tensor]:
        """The weights under vLLM's EAGLE-1 names (no input_layernorm: it is the identity here)."""
        return {name: tensor for name, tensor in self.state_dict().items() if name in HEAD_WEIGHTS}


def eagle_head_config(target_config: LlamaConfig) -> LlamaConfig:
    """The head's config: the target's, with one layer (what vLLM reads beside the weights)."""
    config = copy.deepcopy(target_config)
    config.num_hidden_layers = 1
    return config


def new_eagle_head(target: PreTrainedModel, seed: int = 0) -> EagleHead:
    """A freshly initialised head for this target (Llama's initialisation), in the target's dtype and device."""
    torch.manual_seed(seed)
    head = EagleHead(eagle_head_config(target.config))
    std = target.config.initializer_range
    for module in head.modules():
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, std=std)
    return head.to(device=target.device, dtype=target.dtype)


def save_eagle_head(head: EagleHead, directory: str | Path, dtype: torch.dtype = torch.bfloat16) -> Path:
    """Write the head in vLLM's EAGLE-1 format: config.json (the target's config, one layer) + model.safetensors."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    config = head.config.to_dict()
    config.update(num_hidden_layers=1, architectures=["LlamaForCausalLM"], dtype=str(dtype).removeprefix("torch."))
    config.pop("_attn_implementation_autoset", None)
    config.pop("attn_implementation", None)
    (out / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    weights = {name: t.detach().to("cpu", dtype).contiguous() for name, t in head.vllm_state_dict().items()}
    save_file(weights, str(out / WEIGHTS), metadata={"format": "pt"})
    return out


def is_eagle_head(directory: str | Path) -> bool:
    """Whether a directory holds an EAGLE-1 head (fc.weight and layers.0.*, no embedding of their own; an EAGLE-3
    head's layer is midlayer.*)."""
    path = Path(directory)
    if not (path / "config.json").is_file() or not (path / WEIGHTS).is_file():
        return False
    try:
        with safe_open(str(path / WEIGHTS), "pt") as f:
            names = set(f.keys())
    except (OSError, ValueError, RuntimeError):
        return False
    return {"fc.weight", "layers.0.self_attn.q_proj.weight"} <= names and not any("embed_tokens" in n for n in names)


def load_eagle_head(directory: str | Path, target: PreTrainedModel, target_name: str = "the target") -> EagleHead:
    """Load an EAGLE-1 head for `target`, on its device and dtype; refuse one of another width or vocabulary, and
    one with missing or unexpected weights (which vLLM would drop or miss without a word)."""
    path = Path(directory).expanduser()
    saved = read_head_config(path, "an EAGLE-1 head", "fc.weight and layers.0.*")
    check_fits(path, "EAGLE head", saved, target, target_name)
    weights = read_weights(path)
    check_weight_names(path, "EAGLE head", "EAGLE-1's", weights, HEAD_WEIGHTS)
    try:
        head = EagleHead(LlamaConfig.from_dict(saved))
    except (TypeError, ValueError, KeyError) as exc:
        raise ModelLoadError(f"The head's config.json in {str(path)!r} is not a Llama config: {exc}") from None
    return place_head(head, weights, path, "EAGLE head", target, target_name)


# Shared by the feature heads (EAGLE-1 here, the others in their own modules): the cached causal mask, and the loader's
# refusals of a directory that is not a head, a head for another target, and weights vLLM would drop or miss.


def cached_causal_mask(past: int, n: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor | None:
    """(1, 1, n, past + n) additive mask: n new rows after `past` cached ones, each seeing the cache and the new rows
    up to itself; None when sdpa's own causal mask is right (nothing cached, or one row)."""
    if not past or n <= 1:
        return None
    return causal_mask(past, n, dtype, device)  # (1, 1, n, past + n)


def read_head_config(path: Path, what: str, holds: str) -> dict:
    """The head directory's config.json as a dict, with a width and a vocabulary; a clear error otherwise."""
    if not (path / "config.json").is_file() or not (path / WEIGHTS).is_file():
        raise ModelLoadError(f"{str(path)!r} is not {what}: it needs config.json and {WEIGHTS} ({holds}).")
    try:
        saved = json.loads((path / "config.json").read_text(encoding="utf-8"))
        int(saved["hidden_size"]), int(saved["vocab_size"])
    except (ValueError, KeyError, TypeError) as exc:
        raise ModelLoadError(f"The head's config.json in {str(path)!r} is unreadable: {exc}") from None
    return saved


def check_fits(path: Path, what: str, saved: dict, target: PreTrainedModel, target_name: str) -> None:
    """Refuse a head built for another width or vocabulary than the target's, naming both."""
    width = int(saved.get("target_hidden_size", saved["hidden_size"]))
    vocab = int(saved["vocab_size"])
    config = target.config.get_text_config()
    if (width, vocab) != (config.hidden_size, config.vocab_size):
        raise ModelLoadError(
            f"The {what} in {str(path)!r} was built for width {width} and a vocabulary of {vocab} tokens, but "
            f"{target_name} has width {config.hidden_size} and a vocabulary of {config.vocab_size}: a head reads "
            "the target's own features and LM head, so it must be trained for this target."
        )


def read_weights(path: Path) -> dict[str, torch.Tensor]:
    with safe_open(str(path / WEIGHTS), "pt") as f:
        return {name: f.get_tensor(name) for name in f.keys()}


def check_weight_names(path: Path, what: str, whose: str, weights: dict, expected) -> None:
    """Refuse missing weights, and stray ones (vLLM would drop them silently)."""
    missing, stray = sorted(set(expected) - set(weights)), sorted(set(weights) - set(expected))
    if missing or stray:
        raise ModelLoadError(
            f"The {what} in {str(path)!r} does not hold {whose} weights: "
            + "; ".join(
                part
                for part in (
                    f"missing {', '.join(missing)}" if missing else "",
                    f"unexpected {', '.join(stray)} (vLLM would drop them silently)" if stray else "",
                )
                if part
            )
            + "."
        )


def place_head(head: nn.Module, weights: dict, path: Path, what: str, target: PreTrainedModel, target_name: str):
    """Load the checked weights into the head, frozen, on the target's device and dtype."""
    try:
        head.load_state_dict(weights, strict=False)
    except RuntimeError as exc:  # a tensor of the wrong shape
        raise ModelLoadError(f"The {what} in {str(path)!r} does not fit {target_name}: {exc}") from None
    head.requires_grad_(False)
    return head.to(device=target.device, dtype=target.dtype).eval()
