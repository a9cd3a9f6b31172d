"""A roofline *model* of decoding under load: when does speculation stop paying as concurrency grows?

This is a back-of-the-envelope model, not a measurement. One forward pass over a batch of B sequences, each reading
t new tokens with a context of L tokens, takes

    time = max(bytes / memory bandwidth, FLOPs / peak FLOP/s)
    bytes = weights (params × bytes per param) + B × L × KV bytes per token     (weights read once per pass)
    FLOPs = 2 × params × B × t                                                   (attention FLOPs left out)

Plain decoding: B tokens per target pass (t = 1). Speculative: K draft passes (t = 1) and one target pass over
t = K + 1 tokens per sequence commit B × E(α, K) tokens. At batch 1 the target pass is memory-bound, so the K + 1
tokens are nearly free; as B grows the pass turns compute-bound, the extra K tokens per sequence cost real FLOPs, and
the gain shrinks and then turns into a loss. Ignored: kernel efficiency, launch overheads, KV-capacity limits,
scheduling, the draft's own KV reads being batched with the target's, prefill traffic.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from specviz.core.theory import expected_tokens
from specviz.errors import SettingsError


@dataclass(frozen=True)
class Hardware:
    """Peak numbers from spec sheets (dense bf16 / fp16 tensor throughput, HBM or DRAM bandwidth)."""

    name: str
    bandwidth_gb_s: float  # memory bandwidth, GB/s
    peak_tflops: float  # dense 16-bit peak, TFLOP/s
    memory_gb: float  # what weights + KV caches must fit in

    def __post_init__(self) -> None:
        if not (self.bandwidth_gb_s > 0 and self.peak_tflops > 0 and self.memory_gb > 0):
            raise SettingsError(f"{self.name}: bandwidth, peak FLOP/s and memory must be positive.")

    @property
    def ridge_flops_per_byte(self) -> float:
        """Arithmetic intensity above which a pass is compute-bound."""
        return self.peak_tflops * 1e12 / (self.bandwidth_gb_s * 1e9)


@dataclass(frozen=True)
class ModelSpec:
    """Enough of an architecture to count bytes and FLOPs: parameters and the KV-cache size per token."""

    name: str
    params_b: float  # parameters, billions
    layers: int
    kv_heads: int
    head_dim: int
    bytes_per_param: float = 2.0  # bf16 weights and cache

    def __post_init__(self) -> None:
        if not (self.params_b > 0 and self.layers > 0 and self.kv_heads > 0 and self.head_dim > 0):
            raise SettingsError(f"{self.name}: parameters, layers, KV heads and head size must be positive.")

    @property
    def weight_bytes(self) -> float:
        return self.params_b * 1e9 * self.bytes_per_param

    @property
    def kv_bytes_per_token(self) -> float:
        """Keys and values, every layer: 2 × layers × KV heads × head size × bytes."""
        return 2 * self.layers * self.kv_heads * self.head_dim * self.bytes_per_param


HARDWARE = {
    "H100 SXM": Hardware("H100 SXM", 3350, 989, 80),
    "H200": Hardware("H200", 4800, 989, 141),
    "A100 80GB": Hardware("A100 80GB", 2039, 312, 80),
    "RTX 4090 (consumer)": Hardware("RTX 4090 (consumer)", 1008, 165, 24),
    "Desktop CPU": Hardware("Desktop CPU", 80, 1.5, 64),
}

MODELS = {
    "70B (Llama-3-70B shape)": ModelSpec("70B (Llama-3-70B shape)", 70.6, 80, 8, 128),
    "8B (Llama-3-8B shape)": ModelSpec("8B (Llama-3-8B shape)", 8.0, 32, 8, 128),
    "7B, no GQA (Llama-2-7B shape)": ModelSpec("7B, no GQA (Llama-2-7B shape)", 6.7, 32, 32, 128),
    "1B (Llama-3.2-1B shape)": ModelSpec("1B (Llama-3.2-1B shape)", 1.24, 16, 8, 64),
    "0.5B (Qwen2.5-0.5B shape)": ModelSpec("0.5B (Qwen2.5-0.5B shape)", 0.49, 24, 2, 64),
}

DEFAULT_BATCHES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)


def pass_time(hw: Hardware, model: ModelSpec, batch: int, tokens_per_seq: int, context: int) -> float:
    """Seconds for one forward pass: the slower of moving the bytes and doing the FLOPs."""
    bytes_moved = model.weight_bytes + batch * context * model.kv_bytes_per_token
    flops = 2 * model.params_b * 1e9 * batch * tokens_per_seq
    return max(bytes_moved / (hw.bandwidth_gb_s * 1e9), flops / (hw.peak_tflops * 1e12))


def is_compute_bound(hw: Hardware, model: ModelSpec, batch: int, tokens_per_seq: int, context: int) -> bool:
    bytes_moved = model.weight_bytes + batch * context * model.kv_bytes_per_token
    flops = 2 * model.params_b * 1e9 * batch * tokens_per_seq
    return flops / (hw.peak_tflops * 1e12) > bytes_moved / (hw.bandwidth_gb_s * 1e9)


@dataclass(frozen=True)
class LoadPoint:
    """Modelled throughput at one concurrency."""

    batch: int
    plain_tokens_s: float
    spec_tokens_s: float
    gain: float  # spec / plain
    verify_compute_bound: bool  # the target's verify pass is limited by FLOPs, not bytes
    fits: bool  # target + draft weights and both KV caches fit in the device memory


@dataclass(frozen=True)
class LoadSettings:
    hardware: Hardware
    target: ModelSpec
    draft: ModelSpec
    alpha: float
    k: int
    context: int = 2048

    def __post_init__(self) -> None:
        if not 0 <= self.alpha <= 1:
            raise SettingsError(f"α must be from 0 to 1; got {self.alpha!r}.")
        if not isinstance(self.k, int) or not 1 <= self.k <= 16:
            raise SettingsError(f"K must be a whole number from 1 to 16; got {self.k!r}.")
        if not isinstance(self.context, int) or not 1 <= self.context <= 1_000_000:
            raise SettingsError(f"context length must be a whole number from 1 to 1,000,000; got {self.context!r}.")
        if self.draft.params_b >= self.target.params_b:
            raise SettingsError("the draft model must be smaller than the target for this model to make sense.")


def load_point(s: LoadSettings, batch: int) -> LoadPoint:
    """Plain and speculative tokens/s (all sequences together) at one batch size."""
    plain_step = pass_time(s.hardware, s.target, batch, 1, s.context)
    spec_round = s.k * pass_time(s.hardware, s.draft, batch, 1, s.context) + pass_time(
        s.hardware, s.target, batch, s.k + 1, s.context
    )
    plain = batch / plain_step
    spec = batch * expected_tokens(s.alpha, s.k) / spec_round
    return LoadPoint(
        batch,
        plain,
        spec,
        spec / plain,
        is_compute_bound(s.hardware, s.target, batch, s.k + 1, s.context),
        fits(s, batch),
    )


def memory_needed_gb(s: LoadSettings, batch: int) -> float:
    """Weights of both models plus both KV caches at full context."""
    per_seq = s.context * (s.target.kv_bytes_per_token + s.draft.kv_bytes_per_token)
    return (s.target.weight_bytes + s.draft.weight_bytes + batch * per_seq) / 1e9


def fits(s: LoadSettings, batch: int) -> bool:
    return memory_needed_gb(s, batch) <= s.hardware.memory_gb


def load_curve(s: LoadSettings, batches: Sequence[int] = DEFAULT_BATCHES) -> list[LoadPoint]:
    return [load_point(s, b) for b in batches]


def break_even_batch(s: LoadSettings, max_batch: int = 4096) -> int | None:
    """The smallest batch at which speculation no longer gains (gain <= 1); None if it still pays at max_batch."""
    if load_point(s, 1).gain <= 1:
        return 1
    if load_point(s, max_batch).gain > 1:
        return None
    low, high = 1, max_batch  # gain(low) > 1 >= gain(high); gain falls with batch in this model
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (mid, high) if load_point(s, mid).gain > 1 else (low, mid)
    return high


def log_batches(max_batch: int = 512) -> list[int]:
    """1, 2, 4, ... up to max_batch."""
    return [2**i for i in range(int(math.log2(max_batch)) + 1)]
