"""A lean forward pass for Llama-family decoders (Llama, Qwen2, Mistral, SmolLM): the loaded model's own weights applied
with about sixteen tensor operations per layer and a preallocated cache, so a decoding step costs roughly its matrix
products and not Hugging Face's per-call work (mask and cache objects, module calls, output records).

Hugging Face's forward stays the reference (engine/forward/kv.py runs either): the lean pass computes the same function,
and tests hold its logits to Hugging Face's within float32 tolerance at prefill, one step, a verify pass and a tree
pass."""

from __future__ import annotations

import os
import threading
import weakref
from dataclasses import dataclass
from typing import Protocol

import torch
import torch.nn.functional as F
from transformers import PreTrainedModel

from specviz.core.settings import FORWARD_AUTO, FORWARD_HF, FORWARD_LEAN
from specviz.engine.forward.masks import causal_allowed
from specviz.errors import SettingsError

LEAN_TYPES = ("llama", "qwen2", "mistral")  # decoders whose layer is exactly the one `layer_forward` computes


def lean_refusal(model: PreTrainedModel) -> str | None:
    """Why the lean forward cannot run this model (None: it can), in words naming what it supports."""
    config = model.config
    kind = getattr(config, "model_type", "?")
    if kind not in LEAN_TYPES or not hasattr(model.base_model, "rotary_emb"):
        return f"the lean forward runs Llama, Qwen2 and Mistral decoders; this model is {kind!r}"
    if getattr(config, "hidden_act", "silu") != "silu":
        return f"the lean forward computes SiLU gates; this model uses {config.hidden_act!r}"
    return None  # a sliding window needs nothing: runs stay shorter than it (decode.check_fits), so attention is full


AUTO_ENV = "SPECVIZ_FORWARD"  # "hf": auto means Hugging Face's forward in this process (a suite on the reference)


def chosen_forward(choice: str, model: PreTrainedModel, needs_hf: str | None = None) -> str:
    """The forward one model runs under the run's choice: Hugging Face's when asked or where the lean one cannot run
    (under auto); lean where it can; asking for lean where it cannot is refused, naming why. needs_hf: why this run
    needs Hugging Face's forward whatever the architecture (early exit reads its cache objects)."""
    if choice == FORWARD_HF or (choice == FORWARD_AUTO and os.environ.get(AUTO_ENV) == FORWARD_HF):
        return FORWARD_HF
    why = needs_hf or lean_refusal(model)
    if why and choice == FORWARD_LEAN:
        raise SettingsError(f"The lean forward cannot run here: {why}. Use forward auto or hf.")
    return FORWARD_HF if why else FORWARD_LEAN


@dataclass(frozen=True)
class Matrix:
    """One linear map as the lean pass applies it. In float32 a single row (a decoding step) goes through the
    input-major copy (in, out): x @ W reads it in the order a CPU's matrix-vector kernel streams fastest (about 1.4x
    MKL's speed on the (out, in) layout nn.Linear keeps). Several rows (a verify, tree or prefill pass) go through
    oneDNN's packed copy: MKL's small matrix products cost nearly one matrix-vector product per row on the AMD EPYC
    measured (5 rows of the bundled target's LM head: 861 µs against 156 µs packed), which made a verify pass over
    K + 1 tokens cost 1.6 steps. In bfloat16 every pass, a single row too, goes through the packed copy: MKL has no
    fast bfloat16 matrix-vector kernel (smollm2's tied head, one row, on the AMD EPYC with avx512_bf16: x @ W
    30.6 ms, oneDNN packed 13.3 ms). No packed copy off the CPU or where oneDNN cannot run: every pass then takes
    x @ W."""

    weight: torch.Tensor  # (in, out)
    bias: torch.Tensor | None  # (out,)
    packed: torch.Tensor | None = None  # oneDNN's layout of the same weights (engine-private: only `times` reads it)

    def times(self, x: torch.Tensor, residual: torch.Tensor | None = None) -> torch.Tensor:
        """x (L, in) @ W + bias + residual."""
        rows = x.shape[0]
        if self.packed is not None and (rows > 1 or x.dtype != torch.float32):
            if rows in PADDED_ROWS:  # zero rows added, then dropped: the kernel for a few more rows is faster
                x = torch.cat((x, x.new_zeros(PADDED_ROWS[rows] - rows, x.shape[1])))
            y = torch.ops.mkldnn._linear_pointwise(x, self.packed, self.bias, "none", [], "")[:rows]
            return y if residual is None else y.add_(residual)
        return _times(x, self.weight, self.bias, residual)


PACK_ROWS = 8  # the row count oneDNN packs for: a verify pass over K + 1 tokens, a tree level, a prompt's rows

# Row counts oneDNN's packed linear takes a slow kernel for, and the count to pad them to. Measured on the AMD EPYC
# (AVX512, one thread, float32), smollm2's 121 matrices: 2 rows 41.1 ms, 4 rows 26.9 ms (1 row through x @ W 30.9).
PADDED_ROWS = {2: 4}


PACKED_DTYPES = (torch.float32, torch.bfloat16)  # the precisions oneDNN's packed linear runs on a CPU


def packed_copy(weight: torch.Tensor) -> torch.Tensor | None:
    """oneDNN's packed copy of an input-major (in, out) float32 or bfloat16 CPU matrix, or None where there is none
    to make."""
    if weight.device.type != "cpu" or weight.dtype not in PACKED_DTYPES or not onednn_packs(weight.dtype):
        return None
    return torch.ops.mkldnn._reorder_linear_weight(weight.t().contiguous(), PACK_ROWS)


_ONEDNN: dict[torch.dtype, bool] = {}  # whether this torch build packs and applies oneDNN weights, per dtype


def onednn_packs(dtype: torch.dtype = torch.float32) -> bool:
    """Whether oneDNN's packed linear runs here in this dtype and agrees with x @ W on a small case (tried once per
    process and dtype: a CPU without bfloat16 support may refuse it, or be slow, but not wrong)."""
    if dtype not in _ONEDNN:
        try:
            w, x = torch.randn(8, 4).to(dtype), torch.randn(3, 8).to(dtype)
            packed = torch.ops.mkldnn._reorder_linear_weight(w.t().contiguous(), PACK_ROWS)
            got = torch.ops.mkldnn._linear_pointwise(x, packed, None, "none", [], "")
            tolerance = 1e-5 if dtype == torch.float32 else 5e-2
            _ONEDNN[dtype] = bool(torch.allclose(got.float(), (x @ w).float(), atol=tolerance, rtol=tolerance))
        except (AttributeError, RuntimeError, NotImplementedError):
            _ONEDNN[dtype] = False
    return _ONEDNN[dtype]


class Linear(Protocol):
    """What the lean pass asks of a linear map: a Matrix here, or a quantized copy's packed one
    (engine/forward/quantized.py)."""

    def times(self, x: torch.Tensor, residual: torch.Tensor | None = None) -> torch.Tensor: ...


@dataclass(frozen=True)
class LayerWeights:
    """One decoder layer's weights (a Matrix each: input-major, and packed for passes over several rows)."""

    in_norm: torch.Tensor | None  # (H,) None: a layer without one (EAGLE-1's head)
    qkv: Linear  # (H, heads·d + 2·kv_heads·d): q, k and v projections side by side
    out: Linear  # (heads·d, H)
    post_norm: torch.Tensor  # (H,)
    gate_up: Linear  # (H, 2·I): gate and up projections side by side
    down: Linear  # (I, H)


def input_major(*linears: torch.nn.Linear, share: bool = False) -> Matrix:
    """Linears reading the same input as one (in, sum of outs) matrix, and their biases side by side (None when they
    have none). A copy, the model keeping its own; with share, the model's linears are then made views of it (the
    same values, so the model computes what it did, in one copy of the weights: on a GPU, where memory is short)."""
    weight = torch.cat([linear.weight.detach() for linear in linears]).t().contiguous()  # (in, outs)
    biases = [linear.bias for linear in linears]
    bias = None if all(b is None for b in biases) else torch.cat([b.detach() for b in biases])
    if share:
        start = 0
        for linear in linears:
            rows = linear.weight.shape[0]
            linear.weight.data = weight[:, start : start + rows].t()  # (out, in), a view
            if bias is not None:
                linear.bias.data = bias[start : start + rows]
            start += rows
    return Matrix(weight, bias, None if share else packed_copy(weight))


@dataclass(frozen=True, eq=False)
class LeanWeights:
    """What the lean pass reads from one loaded model: its layers, norms, head, rotary tables and shapes."""

    rotary_emb: torch.nn.Module  # the model's rotary module (not the model: the weights never keep it alive)
    layers: tuple[LayerWeights, ...]
    embed: torch.Tensor  # (V, H)
    final_norm: torch.Tensor | None  # (H,) None: a head without one (EAGLE-1)
    head: Linear  # (H, V_head), input-major like the layers
    eps: float
    heads: int
    kv_heads: int
    head_dim: int
    rotary_table: RotaryTable | None  # None: the model's RoPE varies with the pass's length, so the module runs

    @property
    def dtype(self) -> torch.dtype:
        return self.embed.dtype

    def rotary(self, positions: torch.Tensor, bound: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(L, d) cos and sin at these positions, all below bound (known on the host: no device sync): rows of a
        table the model's own rotary module filled (every RoPE variant it has), or that module itself for the
        variants whose values depend on the pass's length."""
        if self.rotary_table is None:
            return _rotary_rows(self.rotary_emb, self.embed, positions)
        return self.rotary_table.rows(positions, bound)


def _rotary_rows(rotary: torch.nn.Module, embed: torch.Tensor, positions: torch.Tensor):
    """(L, d) cos and sin from a rotary module, which reads only the dtype and device of its first input."""
    cos, sin = rotary(embed[:1][None], position_ids=positions[None])
    return cos[0], sin[0]


class RotaryTable:
    """cos and sin for positions 0..n-1, computed once by the model's rotary module and grown by doubling: a step then
    indexes two rows instead of calling the module (its cat, cos, sin and casts cost about a layer's small operations).
    The values are the module's own, position by position (each is a function of its position alone)."""

    def __init__(self, rotary: torch.nn.Module, embed: torch.Tensor, length: int = 512):
        self.rotary, self.embed = rotary, embed
        self.table = self._filled(length)  # (cos, sin), each (n, d); replaced whole when grown, never written into

    def _filled(self, length: int) -> tuple[torch.Tensor, torch.Tensor]:
        return _rotary_rows(self.rotary, self.embed, torch.arange(length, device=self.embed.device))

    def rows(self, positions: torch.Tensor, bound: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The rows at positions (L,), every one below bound."""
        cos, sin = self.table
        if bound > cos.shape[0]:
            cos, sin = self.table = self._filled(max(2 * cos.shape[0], bound))
        return cos[positions], sin[positions]


LENGTH_DEPENDENT_ROPE = ("dynamic", "longrope")  # RoPE variants that rescale with the pass's length: no table


def rotary_table(config, rotary: torch.nn.Module, embed: torch.Tensor) -> RotaryTable | None:
    """A table of the rotary module's rows, or None where its RoPE type rescales with the pass's length."""
    rope = (getattr(config, "rope_parameters", None) or {}).get("rope_type", "default")
    return None if rope in LENGTH_DEPENDENT_ROPE else RotaryTable(rotary, embed)


_BUILT: weakref.WeakKeyDictionary[PreTrainedModel, LeanWeights] = weakref.WeakKeyDictionary()
_BUILDING = threading.Lock()


def lean_weights(model: PreTrainedModel) -> LeanWeights:
    """The model's lean weights, built once per loaded model (every run and session shares them, read-only)."""
    with _BUILDING:
        if model not in _BUILT:
            _BUILT[model] = _build(model)
        return _BUILT[model]


def _build(model: PreTrainedModel, share: bool | None = None) -> LeanWeights:
    """share (default: off the CPU) makes the model's linears views of the lean matrices instead of keeping two
    copies; on a CPU the copies stay apart, so Hugging Face's forward keeps its own layout, speed and rounding."""
    why = lean_refusal(model)
    if why:
        raise ValueError(why)
    config, base = model.config, model.base_model
    share = model.device.type != "cpu" if share is None else share
    layers = tuple(layer_weights(layer, share) for layer in base.layers)
    heads = config.num_attention_heads
    embed = base.embed_tokens.weight.detach()
    return LeanWeights(
        rotary_emb=base.rotary_emb,
        layers=layers,
        embed=embed,
        final_norm=base.norm.weight.detach(),
        head=_head(model.get_output_embeddings().weight.detach(), share),
        eps=float(config.rms_norm_eps),
        heads=heads,
        kv_heads=getattr(config, "num_key_value_heads", None) or heads,
        head_dim=getattr(config, "head_dim", None) or config.hidden_size // heads,
        rotary_table=rotary_table(config, base.rotary_emb, embed),
    )


def layer_weights(layer: torch.nn.Module, share: bool = False) -> LayerWeights:
    """A Llama-style decoder layer's weights as the lean pass reads them (in_norm None where the layer has none)."""
    attn, mlp = layer.self_attn, layer.mlp
    norm = getattr(layer.input_layernorm, "weight", None)  # EAGLE-1's layer has nn.Identity there
    with torch.no_grad():
        return LayerWeights(
            in_norm=None if norm is None else norm.detach(),
            qkv=input_major(attn.q_proj, attn.k_proj, attn.v_proj, share=share),
            out=input_major(attn.o_proj, share=share),
            post_norm=layer.post_attention_layernorm.weight.detach(),
            gate_up=input_major(mlp.gate_proj, mlp.up_proj, share=share),
            down=input_major(mlp.down_proj, share=share),
        )


def _head(weight: torch.Tensor, share: bool) -> Matrix:
    """The LM head (V, H) as an input-major Matrix, packed for passes over several rows (off the GPU)."""
    with torch.no_grad():
        head = weight.t().contiguous()  # (H, V)
    return Matrix(head, None, None if share else packed_copy(head))


class LeanCache:
    """One run's keys and values for every layer, preallocated and grown by doubling; crop is a length change.

    The same two methods as transformers' DynamicCache that the engine uses (get_seq_length, crop), so a
    CachedModel's rollback reads the same either way.
    """

    def __init__(self, weights: LeanWeights, capacity: int = 256):
        shape = (len(weights.layers), weights.kv_heads, capacity, weights.head_dim)  # (layers, kv_heads, T, d)
        self.keys = torch.zeros(shape, dtype=weights.dtype, device=weights.embed.device)
        self.values = torch.zeros_like(self.keys)
        self.length = 0

    def get_seq_length(self) -> int:
        return self.length

    def crop(self, max_length: int) -> None:
        """Keep the first max_length tokens (negative: drop that many from the end), as DynamicCache.crop does."""
        self.length = max_length if max_length >= 0 else max(self.length + max_length, 0)

    def reserve(self, total: int) -> None:
        """Room for `total` tokens, copying into a larger buffer when the run outgrows this one."""
        capacity = self.keys.shape[2]
        if total <= capacity:
            return
        grown = max(total, 2 * capacity)
        for name in ("keys", "values"):
            old = getattr(self, name)
            new = old.new_zeros((*old.shape[:2], grown, old.shape[3]))
            new[:, :, : self.length] = old[:, :, : self.length]
            setattr(self, name, new)


def lean_forward(
    weights: LeanWeights,
    cache: LeanCache,
    ids: torch.Tensor,
    positions: torch.Tensor | None = None,
    allowed: torch.Tensor | None = None,
    keep_layers: tuple[int, ...] = (),
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Read ids (L,) into the cache; return the final-normed hidden states (L, H) and, when layers are asked, the
    hidden states Hugging Face's `output_hidden_states` would give at those indices (0: embeddings, -1: the final
    normed ones), (layers, L, H).

    positions (L,): each token's position (default: after the cache, in order); allowed (L, cache + L) bool: which
    tokens each new one attends to (default causal; a tree passes its own).
    """
    cached, n = cache.length, ids.numel()
    device = ids.device
    if positions is None:
        positions = torch.arange(cached, cached + n, device=device)
    mask = None if allowed is None and n == 1 else (causal_allowed(cached, n, device) if allowed is None else allowed)
    cache.reserve(cached + n)
    cos, sin = weights.rotary(positions, cached + n)  # (L, d); every position is below cached + n
    hidden = F.embedding(ids, weights.embed)  # (L, H)
    states = [hidden]  # every layer's output, kept only as references: Hugging Face's hidden_states
    for index, layer in enumerate(weights.layers):
        hidden = layer_forward(weights, layer, index, cache, hidden, cos, sin, mask)
        states.append(hidden)
    cache.length = cached + n
    states[-1] = F.rms_norm(hidden, hidden.shape[-1:], weights.final_norm, weights.eps)  # the last one is normed
    return states[-1], torch.stack([states[i] for i in keep_layers]) if keep_layers else None


def layer_forward(
    weights: LeanWeights,
    layer: LayerWeights,
    index: int,
    cache: LeanCache,
    hidden: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor,
    mask: torch.Tensor | None,
    reads: torch.Tensor | None = None,
) -> torch.Tensor:
    """One decoder layer on hidden (L, H): pre-norm attention over the cache, then the gated MLP, each residual.
    reads (L, in): what q, k and v read, when a head norms its own input (EAGLE-3: [norm(emb); norm(h)], 2H);
    default the input norm of hidden, or hidden itself for a layer without one (EAGLE-1)."""
    n, heads, kv_heads, d = hidden.shape[0], weights.heads, weights.kv_heads, weights.head_dim
    start, end = cache.length, cache.length + n
    if reads is None:
        reads = hidden if layer.in_norm is None else F.rms_norm(hidden, hidden.shape[-1:], layer.in_norm, weights.eps)
    qkv = layer.qkv.times(reads).view(n, heads + 2 * kv_heads, d).transpose(0, 1)  # (heads', L, d)
    rotated = qkv[: heads + kv_heads]  # q and k get the rotary embedding together
    half = d // 2
    turned = torch.cat((-rotated[..., half:], rotated[..., :half]), dim=-1)
    rotated = torch.addcmul(rotated * cos, turned, sin)
    cache.keys[index, :, start:end] = rotated[heads:]
    cache.values[index, :, start:end] = qkv[heads + kv_heads :]
    attended = F.scaled_dot_product_attention(
        rotated[None, :heads],  # (1, heads, L, d)
        cache.keys[index, None, :, :end],  # (1, kv_heads, T, d)
        cache.values[index, None, :, :end],
        attn_mask=mask,
        enable_gqa=kv_heads != heads,
    )  # (1, heads, L, d)
    attended = attended[0].transpose(0, 1).reshape(n, heads * d)
    hidden = layer.out.times(attended, hidden)
    x = F.rms_norm(hidden, hidden.shape[-1:], layer.post_norm, weights.eps)
    gate, up = layer.gate_up.times(x).chunk(2, dim=-1)
    return layer.down.times(F.silu(gate) * up, hidden)


def _times(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, residual: torch.Tensor | None = None):
    """x (L, in) @ weight (in, out) + bias + residual, in one kernel call where there is something to add."""
    if bias is not None:
        residual = bias if residual is None else residual + bias
    return x @ weight if residual is None else torch.addmm(residual, x, weight)


def prepare_forwards(models: tuple[PreTrainedModel | None, ...], choice: str = FORWARD_AUTO) -> float:
    """Build the lean weights of every model that runs the lean forward under this choice, now (seconds taken): the
    copies and oneDNN's packing of a 30-layer target take seconds, which a benchmark's clock must not count."""
    import time

    start = time.perf_counter()
    for model in models:
        if model is not None and chosen_forward(choice, model) == FORWARD_LEAN:
            lean_weights(model)
    return time.perf_counter() - start
