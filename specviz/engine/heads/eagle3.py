"""The EAGLE-3 head: drafts from the target's residual stream at three depths, over a draft vocabulary of its own.

EAGLE-3 (Li et al. 2025; SafeAILab/EAGLE `eagle/traineagle3/cnets.py`, vLLM `model_executor/models/llama_eagle3.py`):

    h_t = fc([a_t^(2); a_t^(5); a_t^(7)])               the target's hidden states 2, 5, 7 at row t (pre-norm), 3H -> H
    r   = h_t + attn([input_layernorm(emb(x_{t+1})); hidden_norm(h_t)])          the attention reads 2H
    s   = r + mlp(post_attention_layernorm(r))                                     s: the pre-norm output, fed back
    q(x_{t+2}) from lm_head(norm(s))                    its own LM head over N draft tokens: target id = i + d2t[i]

The layers read are vLLM's default (2, L // 2, L - 3) for a target of L layers, sorted as vLLM sorts them. vLLM
appends layer i's aux state `hidden_states + residual` before decoder layer i runs: transformers' hidden_states[i]
(0 = the embeddings), the residual stream before any norm. The first draft step of a round reads fc of the target's
real states of the committed rows; every later step feeds the head's own pre-norm output s back in place of h, with no
fc (vLLM's proposer applies `combine_hidden_states` to the target's states only). The embedding is the target's,
shared; the LM head is the head's own, over the draft vocabulary (the N most frequent tokens of the corpus).

Files (vLLM's EAGLE-3 format, loaded there with {"method": "eagle3", "model": DIR}): `config.json` = the target's
Llama config with `architectures: ["LlamaForCausalLMEagle3"]`, `num_hidden_layers: 1`, `draft_vocab_size`,
`target_hidden_size` and `eagle_aux_hidden_state_layer_ids`; `model.safetensors` = `fc.weight`, `midlayer.*`,
`norm.weight`, `lm_head.weight` and `d2t` (int64). Loading refuses stray weights, which vLLM would drop silently.
"""

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

ARCHITECTURE = "LlamaForCausalLMEagle3"
MIDLAYER_WEIGHTS = (
    "input_layernorm.weight",
    "hidden_norm.weight",
    "self_attn.q_proj.weight",
    "self_attn.k_proj.weight",
    "self_attn.v_proj.weight",
    "self_attn.o_proj.weight",
    "post_attention_layernorm.weight",
    "mlp.gate_proj.weight",
    "mlp.up_proj.weight",
    "mlp.down_proj.weight",
)
HEAD3_WEIGHTS = ("fc.weight", *(f"midlayer.{n}" for n in MIDLAYER_WEIGHTS), "norm.weight", "lm_head.weight", "d2t")
WHAT = "EAGLE-3 head"


def default_layers(num_layers: int) -> tuple[int, ...]:
    """vLLM's default aux layers for a target of this depth (get_eagle3_default_aux_hidden_state_layers), sorted and
    without repeats as vLLM keeps them."""
    return tuple(sorted({2, num_layers // 2, num_layers - 3}))


class Eagle3Head(nn.Module):
    """fc over the fused target states, one decoder layer over [norm(emb); norm(h)], a final norm and its own LM head
    over the draft vocabulary (d2t maps draft ids to the target's); a KV cache per run."""

    def __init__(self, config: LlamaConfig, draft_vocab_size: int, layers: tuple[int, ...]):
        super().__init__()
        config = copy.deepcopy(config)
        config.num_hidden_layers = 1
        config._attn_implementation = "sdpa"
        self.config = config
        self.layers_read = tuple(layers)  # indices into the target's hidden_states, ascending
        self.draft_vocab_size = draft_vocab_size
        width, heads, kv_heads = config.hidden_size, config.num_attention_heads, config.num_key_value_heads
        head_dim = getattr(config, "head_dim", None) or width // heads
        self.fc = nn.Linear(len(self.layers_read) * width, width, bias=False)
        self.midlayer = LlamaDecoderLayer(config, layer_idx=0)
        attn = self.midlayer.self_attn  # q, k and v read [norm(emb); norm(h)]: 2H wide
        attn.q_proj = nn.Linear(2 * width, heads * head_dim, bias=False)
        attn.k_proj = nn.Linear(2 * width, kv_heads * head_dim, bias=False)
        attn.v_proj = nn.Linear(2 * width, kv_heads * head_dim, bias=False)
        self.midlayer.hidden_norm = LlamaRMSNorm(width, eps=config.rms_norm_eps)
        self.norm = LlamaRMSNorm(width, eps=config.rms_norm_eps)
        self.lm_head = nn.Linear(width, draft_vocab_size, bias=False)
        self.register_buffer("d2t", torch.zeros(draft_vocab_size, dtype=torch.long))  # target id = i + d2t[i]
        self.rotary_emb = LlamaRotaryEmbedding(config)

    def new_cache(self) -> DynamicCache:
        return DynamicCache(config=self.config)

    @property
    def target_ids(self) -> torch.Tensor:
        """(N,) the target token id of each draft id."""
        return torch.arange(self.draft_vocab_size, device=self.d2t.device) + self.d2t

    def fuse(self, states: torch.Tensor) -> torch.Tensor:
        """(B, T, n * H) the target's states at the layers read, side by side -> (B, T, H) h."""
        return self.fc(states)

    def forward(
        self,
        embeds: torch.Tensor,
        hidden: torch.Tensor,
        cache: DynamicCache | None = None,
        positions: torch.Tensor | None = None,
        mask: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """embeds (B, T, H) of x_{t+1}, hidden (B, T, H) h_t (fc's output, or the head's own s) -> (normed, s), both
        (B, T, H): lm_head(normed) drafts x_{t+2}, s is fed back for the next step.

        Pair t sits at position t, after the pairs the cache holds (as EAGLE-1's head); training passes its own
        positions and mask for the unrolled steps of training-time test."""
        past = cache.get_seq_length() if cache is not None else 0
        n = embeds.shape[1]
        if positions is None:
            positions = torch.arange(past, past + n, device=embeds.device)[None]  # (1, T)
            if cache is not None:
                mask = cached_causal_mask(past, n, hidden.dtype, embeds.device)
        layer = self.midlayer
        both = torch.cat([layer.input_layernorm(embeds), layer.hidden_norm(hidden)], dim=-1)  # (B, T, 2H)
        attended, _ = layer.self_attn(
            hidden_states=both,
            attention_mask=mask,
            position_ids=positions,
            cache=cache,
            use_cache=cache is not None,
            position_embeddings=self.rotary_emb(hidden, positions),
        )
        residual = hidden + attended  # (B, T, H)
        s = residual + layer.mlp(layer.post_attention_layernorm(residual))
        return self.norm(s), s

    def target_logits(self, normed: torch.Tensor, vocab_size: int) -> torch.Tensor:
        """(..., H) -> (..., V) the draft logits placed at their target ids, -inf elsewhere (q = 0 there)."""
        small = self.lm_head(normed)  # (..., N)
        full = small.new_full((*small.shape[:-1], vocab_size), float("-inf"))
        full[..., self.target_ids] = small
        return full

    def lean_parts(self) -> HeadParts:
        """Its lean step (engine/heads/lean_heads.py): its layer reads [input_layernorm(e); hidden_norm(h)] whole; its
        own LM head over the draft vocabulary, placed at the target's ids; fc fuses the target's states."""
        from specviz.engine.heads.lean_heads import HeadParts

        return HeadParts(
            self.midlayer,
            self.fc,
            emb_norm=self.midlayer.input_layernorm.weight,
            state_norm=self.midlayer.hidden_norm.weight,
            final_norm=self.norm.weight,
            lm_head=self.lm_head,
            reads_whole=True,
            target_ids=self.target_ids,
        )

    def vllm_state_dict(self) -> dict[str, torch.Tensor]:
        return {name: tensor for name, tensor in self.state_dict().items() if name in HEAD3_WEIGHTS}


def new_head3(target: PreTrainedModel, vocab_ids: torch.Tensor, layers: tuple[int, ...] | None = None, seed: int = 0):
    """A freshly initialised EAGLE-3 head for this target over the draft vocabulary `kept` (N ascending target ids),
    reading `layers` (vLLM's default when None), in the target's dtype and device."""
    config = target.config.get_text_config()
    layers = default_layers(config.num_hidden_layers) if layers is None else tuple(sorted(set(layers)))
    torch.manual_seed(seed)
    head = Eagle3Head(copy.deepcopy(config), len(vocab_ids), layers)
    for module in head.modules():
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, std=config.initializer_range)
    with torch.no_grad():
        head.d2t.copy_(vocab_ids.to(torch.long) - torch.arange(len(vocab_ids), device=vocab_ids.device))
    return head.to(device=target.device, dtype=target.dtype)


def save_head3(head: Eagle3Head, directory: str | Path, dtype: torch.dtype = torch.bfloat16) -> Path:
    """Write the head in vLLM's EAGLE-3 format: config.json + model.safetensors (d2t stays int64)."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    config = head.config.to_dict()
    config.update(
        num_hidden_layers=1,
        architectures=[ARCHITECTURE],
        draft_vocab_size=head.draft_vocab_size,
        target_hidden_size=head.config.hidden_size,
        eagle_aux_hidden_state_layer_ids=list(head.layers_read),
        tie_word_embeddings=False,  # its LM head is its own
        dtype=str(dtype).removeprefix("torch."),
    )
    for key in ("_attn_implementation_autoset", "attn_implementation"):
        config.pop(key, None)
    (out / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    weights = {
        name: t.detach().to("cpu", dtype if t.is_floating_point() else t.dtype).contiguous()
        for name, t in head.vllm_state_dict().items()
    }
    save_file(weights, str(out / WEIGHTS), metadata={"format": "pt"})
    return out


def is_eagle3_config(config: dict) -> bool:
    return ARCHITECTURE in (config.get("architectures") or ())


def is_eagle3_head(directory: str | Path) -> bool:
    """Whether a directory holds an EAGLE-3 head: its config names LlamaForCausalLMEagle3, beside the weights."""
    path = Path(directory)
    if not (path / "config.json").is_file() or not (path / WEIGHTS).is_file():
        return False
    try:
        return is_eagle3_config(json.loads((path / "config.json").read_text(encoding="utf-8")))
    except (OSError, ValueError, AttributeError):
        return False


def load_head3(directory: str | Path, target: PreTrainedModel, target_name: str = "the target") -> Eagle3Head:
    """Load an EAGLE-3 head for `target`; refuse another width or vocabulary, layers the target does not have, a d2t
    that leaves the vocabulary, and missing or stray weights."""
    path = Path(directory).expanduser()
    saved = read_head_config(path, "an EAGLE-3 head", "fc, midlayer.*, norm, lm_head and d2t")
    if not is_eagle3_config(saved):
        raise ModelLoadError(
            f"{str(path)!r} is not an EAGLE-3 head: its config.json names architectures "
            f"{saved.get('architectures')}, not [{ARCHITECTURE!r}]."
        )
    check_fits(path, WHAT, saved, target, target_name)
    config = target.config.get_text_config()
    depth = config.num_hidden_layers
    layers = saved.get("eagle_aux_hidden_state_layer_ids") or default_layers(depth)
    try:
        layers = tuple(sorted({int(i) for i in layers}))
        draft_vocab = int(saved.get("draft_vocab_size") or saved["vocab_size"])
    except (TypeError, ValueError) as exc:
        raise ModelLoadError(f"The head's config.json in {str(path)!r} is unreadable: {exc}") from None
    if not all(0 <= i < depth for i in layers):
        raise ModelLoadError(
            f"The {WHAT} in {str(path)!r} reads the target's hidden states {list(layers)}, but {target_name} has "
            f"{depth} layers (states 0 to {depth - 1} before its final norm)."
        )
    weights = read_weights(path)
    check_weight_names(path, WHAT, "EAGLE-3's", weights, HEAD3_WEIGHTS)
    d2t = weights["d2t"]
    ids = torch.arange(len(d2t)) + d2t.to(torch.long)
    if d2t.dtype != torch.int64 or len(d2t) != draft_vocab or ids.min() < 0 or ids.max() >= config.vocab_size:
        raise ModelLoadError(
            f"The {WHAT}'s d2t in {str(path)!r} must be {draft_vocab} int64 offsets mapping draft ids into the "
            f"target's vocabulary of {config.vocab_size} (got {len(d2t)} of {d2t.dtype})."
        )
    try:
        head = Eagle3Head(LlamaConfig.from_dict(saved), draft_vocab, layers)
    except (TypeError, ValueError, KeyError) as exc:
        raise ModelLoadError(f"The head's config.json in {str(path)!r} is not a Llama config: {exc}") from None
    return place_head(head, weights, path, WHAT, target, target_name)
