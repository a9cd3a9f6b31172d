"""The calculator's roofline (core/roofline.py) for the pair and machine a load sweep measured, beside the sweep.

The roofline needs two numbers of the machine, memory bandwidth and FLOP/s: here they are measured (a large copy, a
matrix product), not taken from a spec sheet, so the prediction is for this CPU. It needs the pair's shapes too
(parameters, layers, KV heads, head size), read off the loaded models, and α and K, taken from the speculative
server's own metrics at each level. What it leaves out (framework and scheduling overhead per step, which dominates
tiny models on a CPU) is exactly what the measured curve shows: the words below say how far the two lie apart.
"""

from __future__ import annotations

import math
import os
import time

import torch

from specviz.core.roofline import Hardware, LoadSettings, ModelSpec, load_point

COPY_BYTES = 128 * 2**20  # the copy that measures bandwidth: far above any cache
MATMUL_SIZE = 1024  # the product that measures FLOP/s


def _best_seconds(work, repeats: int) -> float:
    work()  # warm-up: the first call pays for allocation
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - start)
    return best


def measured_hardware(repeats: int = 5) -> Hardware:
    """This machine's memory bandwidth (a 128 MiB float32 copy: read + write) and dense float32 FLOP/s (a 1024²
    matrix product), best of `repeats`; about a second. Memory is the machine's RAM. Its name gives the load it was
    measured under: on a busy machine both numbers drop, and the roofline with them."""
    source = torch.empty(COPY_BYTES // 4, dtype=torch.float32).fill_(1.0)
    target = torch.empty_like(source)
    copy_s = _best_seconds(lambda: target.copy_(source), repeats)
    a = torch.randn(MATMUL_SIZE, MATMUL_SIZE)
    product_s = _best_seconds(lambda: a @ a, repeats)
    ram_gb = _ram_gb()
    name = f"this machine (measured at load {os.getloadavg()[0]:.1f})"
    return Hardware(name, 2 * COPY_BYTES / copy_s / 1e9, 2 * MATMUL_SIZE**3 / product_s / 1e12, ram_gb)


def _ram_gb() -> float:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 1e9
    except (ValueError, OSError, AttributeError):  # not a POSIX system: a size that never limits the tiny pair
        return 16.0


def model_spec(model: torch.nn.Module, name: str) -> ModelSpec:
    """A loaded causal LM's shape as the roofline counts it: its parameters (tied embeddings once), layers, KV heads,
    head size, and bytes per parameter of its weights."""
    config = model.config
    heads = config.num_attention_heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads
    first = next(model.parameters())
    params = sum(p.numel() for p in model.parameters())
    return ModelSpec(
        name,
        params / 1e9,
        config.num_hidden_layers,
        getattr(config, "num_key_value_heads", None) or heads,
        head_dim,
        first.element_size(),
    )


def roofline_rows(doc: dict, hardware: Hardware, target: ModelSpec, draft: ModelSpec) -> list[dict]:
    """Per speculative server and measured level: the roofline's speedup (throughput and, at a fixed batch, per-token
    latency alike) at that concurrency, from the α the server reported there and its K. Context: the sweep's new
    tokens plus the prompts' mean length at 4 characters a token (the KV term hardly matters for the tiny pair)."""
    ks = {s["server"]: s.get("k") for s in doc["servers"]}
    prompts = doc.get("prompts") or [{"chars": 0}]
    context = int(doc["settings"]["max_new_tokens"] + sum(p["chars"] for p in prompts) / len(prompts) / 4)
    rows = []
    for level in doc["levels"]:
        for summary in level["summaries"]:
            k, alpha = ks.get(summary["server"]), summary.get("alpha")
            if not k or alpha is None:
                continue  # the baseline, or a server that reported no acceptance
            settings = LoadSettings(hardware, target, draft, min(max(alpha, 0.0), 1.0), int(k), max(context, 1))
            point = load_point(settings, level["concurrency"])
            rows.append({
                "server": summary["server"], "concurrency": level["concurrency"], "predicted": point.gain,
                "alpha": alpha, "k": int(k), "compute_bound": point.verify_compute_bound,
            })  # fmt: skip
    return rows


def difference_words(doc: dict, predicted: list[dict]) -> str:
    """What lies between the measured latency speedups and the roofline's, level by level, and why they differ."""
    measured = {
        (c["server"], c["concurrency"]): c["latency_speedup"]
        for level in doc["levels"]
        for c in level["speedups"]
        if c["latency_speedup"] is not None
    }
    parts = [
        f"at {row['concurrency']} measured {measured[row['server'], row['concurrency']]:.2f}× against the roofline's "
        f"{row['predicted']:.2f}×" + (f" ({row['server']})" if len(doc["servers"]) > 1 else "")
        for row in predicted
        if (row["server"], row["concurrency"]) in measured
    ]
    if not parts:
        return "No level has both a measured speedup and the α the roofline needs."
    return (
        "End-to-end latency speedup: "
        + "; ".join(parts)
        + ". The roofline counts only the bytes of weights and KV cache and the FLOPs of each pass: it leaves out "
        "every step's fixed cost (the server's scheduling, the framework's per-layer calls, sampling, streaming), "
        "which for a tiny pair on a CPU is most of a step. Each target step and each draft step pays it, so the "
        "measurement can fall on either side of the prediction: below where the K draft steps' fixed cost eats the "
        "gain, above where plain decoding's one-token steps pay more of it per token than speculation's fewer, "
        "longer ones."
    )
