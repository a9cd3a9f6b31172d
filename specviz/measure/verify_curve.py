"""The memory-bound lesson, measured: v(K), the cost of verifying K drafts (one pass over K + 1 tokens) in target
steps, for K = 1..16, for each target, beside its weight bytes and this machine's measured memory bandwidth.

A decoding step streams every weight once; a verify pass over K + 1 tokens streams them once too, and only the
arithmetic grows with K. Where a step is bound by memory, v(K) stays near 1 until the arithmetic catches up; where
per-step overhead dominates (a 10 M-parameter toy), the curve says little about weights at all. The bound on plain
decoding is bandwidth / weight bytes tokens per second.
"""

from __future__ import annotations

from specviz.core.settings import FORWARD_AUTO
from specviz.core.theory import MAX_K
from specviz.engine.costs import measure_costs
from specviz.engine.forward.lean import prepare_forwards
from specviz.engine.loading.models import ModelPair, recorded_name

FORMAT, VERSION = "specviz.verify-curve", 1


def weight_bytes(model) -> int:
    """The bytes of a model's weights as a step streams them: every parameter once (tied embeddings once)."""
    seen, total = set(), 0
    for param in model.parameters():
        if param.data_ptr() not in seen:
            seen.add(param.data_ptr())
            total += param.numel() * param.element_size()
    return total


def verify_curve(pair: ModelPair, name: str, repeats: int = 5, forward: str = FORWARD_AUTO) -> dict:
    """One target's curve: v(K) for K = 1..16 (medians of `repeats`, engine/costs.py), its step and weight bytes."""
    built_s = prepare_forwards((pair.target,), forward)  # before any clock: the lean weights' copies and packing
    costs = measure_costs(pair, k_max=MAX_K, repeats=repeats, forward=forward)
    return {
        "pair": name,
        "target": recorded_name(pair.target_name),
        "dtype": str(pair.dtype).removeprefix("torch."),
        "forward": dict(costs.forward)["target"],
        "parameters": sum(p.numel() for p in {p.data_ptr(): p for p in pair.target.parameters()}.values()),
        "weight_bytes": weight_bytes(pair.target),
        "lean_weights_built_s": round(built_s, 3),
        "context_tokens": costs.context_tokens,
        "target_step_s": costs.target_step_s,
        "tokens_per_s": 1 / costs.target_step_s,
        "verify_cost": [round(v, 4) for v in costs.verify_relative],  # v(K) for K = 1..16
    }


def curve_document(curves: list[dict], bandwidth_gb_s: float, environment: dict) -> dict:
    """Every target's curve with the bandwidth bound on its plain decoding (bandwidth / weight bytes) and the share of
    it a step reached here."""
    rows = []
    for curve in curves:
        bound = bandwidth_gb_s * 1e9 / curve["weight_bytes"]
        rows.append({**curve, "bound_tokens_per_s": bound, "fraction_of_bound": curve["tokens_per_s"] / bound})
    return {
        "format": FORMAT,
        "version": VERSION,
        "bandwidth_gb_s": bandwidth_gb_s,
        "environment": environment,
        "targets": rows,
    }


def curve_lines(doc: dict) -> list[str]:
    """The document as a few lines of text."""
    lines = [f"memory bandwidth {doc['bandwidth_gb_s']:.1f} GB/s (a 128 MiB copy, measured now)"]
    for row in doc["targets"]:
        v = row["verify_cost"]
        lines.append(
            f"{row['pair']:<9} {row['dtype']:<8} {row['weight_bytes'] / 1e6:7.1f} MB  plain {row['tokens_per_s']:6.1f} "
            f"tokens/s, bound {row['bound_tokens_per_s']:7.1f} ({row['fraction_of_bound']:.2f})  v(2) {v[1]:.2f}  "
            f"v(4) {v[3]:.2f}  v(8) {v[7]:.2f}  v(16) {v[15]:.2f}"
        )
    return lines
