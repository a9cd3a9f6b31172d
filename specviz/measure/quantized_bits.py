"""The quantized self-draft by bits, as `bench` measured it (assets/bench/quantized-*.json): per bits the α, c and τ
of its best K and the speedup they gave, for the calculator's measured preset ("the target at N bits") and its
α-by-bits chart. Pure: the files are read by `recorded_bits`, the choosing is plain arithmetic on their dicts."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from specviz import methods

PREFIX = "quantized-"  # assets/bench/quantized-<pair>-<dtype>-<bits>bit-k<K>[...].json, written by the sweep


@dataclass(frozen=True)
class BitsPoint:
    """One precision of the copy at its best measured K."""

    bits: int
    k: int
    alpha: float
    c: float
    tau: float
    verify: float  # v(K): the verify pass over K + 1 tokens, in target steps, as the runs' rounds measured it
    speedup: float  # measured, over plain (median of paired ratios)
    predicted: float  # what α, c and the measured v(K) predict
    prompts: int
    cpu: str  # where: 'AMD EPYC (AVX2), float32, 1 thread'
    file: str


def bits_points(docs: Iterable[dict], target: str, dtype: str, machine: str = "") -> tuple[BitsPoint, ...]:
    """Per bits (most first), the quantized lane of the bench runs on this target and precision (and machine, as
    `where` names it, when given) with the best measured speedup; a bits value never benched is absent, not guessed."""
    best: dict[int, BitsPoint] = {}
    for doc in docs:
        env, settings = doc.get("environment", {}), doc.get("settings", {})
        if env.get("target") != target or env.get("dtype") != dtype or "quant" not in settings:
            continue
        if machine and where(env) != machine:
            continue
        for row in doc.get("results", []):
            if row.get("method") != methods.QUANTIZED or any(row.get(f) is None for f in ("alpha", "c", "verify_cost")):
                continue
            point = BitsPoint(
                bits=int(settings["quant"]["bits"]),
                k=int(row["k"]),
                alpha=float(row["alpha"]),
                c=float(row["c"]),
                tau=float(row["tau"]),
                verify=float(row["verify_cost"]),
                speedup=float(row["speedup_vs_plain"]),
                predicted=float(row["predicted_speedup"]),
                prompts=int(settings.get("prompts", 0)),
                cpu=where(env),
                file=str(doc.get("file", "")),
            )
            if point.bits not in best or point.speedup > best[point.bits].speedup:
                best[point.bits] = point
    return tuple(best[bits] for bits in sorted(best, reverse=True))


def by_machine(docs: Iterable[dict], target: str, dtype: str) -> dict[str, tuple[BitsPoint, ...]]:
    """bits_points per machine that measured this target and precision: a 4-bit figure from one CPU and a 3-bit one
    from another are never drawn as one curve (the kernels differ: docs/speed.md)."""
    docs = list(docs)
    machines = {p.cpu for p in bits_points(docs, target, dtype)}
    return {m: bits_points(docs, target, dtype, m) for m in sorted(machines)}


def recorded_bits(folder: Path, target: str, dtype: str = "float32") -> dict[str, tuple[BitsPoint, ...]]:
    """by_machine over the quantized bench files committed in `folder` (assets/bench)."""
    docs = [json.loads(p.read_text()) | {"file": p.name} for p in sorted(folder.glob(f"{PREFIX}*.json"))]
    return by_machine(docs, target, dtype)


def closest_machine(machines: Iterable[str], capability: str) -> str:
    """The machine to show first: one with this CPU's capability (AVX2, AVX512), else the one first named."""
    names = list(machines)
    return next((m for m in names if f"({capability})" in m), names[0] if names else "")


def where(env: dict) -> str:
    """A bench's machine as a figure must name it: CPU, capability, precision and threads."""
    threads = env.get("torch_threads")
    return f"{env.get('cpu', '?')} ({env.get('cpu_capability', '?')}), {env.get('dtype', '?')}" + (
        f", {threads} thread{'s' if threads != 1 else ''}" if threads else ""
    )


def point_words(point: BitsPoint) -> str:
    """'4 bits: α 0.99, c 0.41, K 5, τ 5.57, v(K) 1.04: 1.62× plain measured (1.86× predicted), 20 prompts on …'."""
    return (
        f"{point.bits} bits: α {point.alpha:.2f}, c {point.c:.2f}, K {point.k}, τ {point.tau:.2f}, "
        f"v(K) {point.verify:.2f}: "
        f"{point.speedup:.2f}× plain measured ({point.predicted:.2f}× predicted), {point.prompts} prompts on "
        f"{point.cpu}"
    )
