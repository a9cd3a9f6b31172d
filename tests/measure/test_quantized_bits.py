"""The calculator's measured preset "the target at N bits" (measure/quantized_bits.py): per bits the best measured K
of the quantized lane, on the named target and precision only, and nothing for a bits value never benched."""

from __future__ import annotations

import pytest

from specviz.engine.loading.models import ASSETS
from specviz.measure.quantized_bits import bits_points, by_machine, closest_machine, point_words, recorded_bits


def bench(bits: int, k: int, speedup: float, alpha: float, target: str = "smollm2", dtype: str = "float32") -> dict:
    row = {"method": "quantized", "k": k, "alpha": alpha, "c": 0.4, "tau": 4.0, "verify_cost": 1.1,
           "speedup_vs_plain": speedup, "predicted_speedup": speedup + 0.2}  # fmt: skip
    plain = {"method": "plain", "k": k, "alpha": None, "c": None, "speedup_vs_plain": 1.0}
    return {
        "environment": {
            "target": target,
            "dtype": dtype,
            "cpu": "AMD EPYC",
            "cpu_capability": "AVX2",
            "torch_threads": 1,
        },
        "settings": {"quant": {"bits": bits, "group": 32, "head_bits": 16}, "prompts": 6},
        "results": [plain, row],
        "file": f"quantized-{bits}-{k}.json",
    }


def test_each_bits_keeps_its_best_k_and_the_list_runs_from_most_bits_to_fewest():
    docs = [bench(4, 3, 1.4, 0.99), bench(4, 5, 1.6, 0.98), bench(2, 1, 0.6, 0.01), bench(8, 5, 1.1, 0.99)]
    points = bits_points(docs, "smollm2", "float32")
    assert [(p.bits, p.k, p.speedup) for p in points] == [(8, 5, 1.1), (4, 5, 1.6), (2, 1, 0.6)]
    assert points[1].alpha == pytest.approx(0.98) and points[1].file == "quantized-4-5.json"


def test_another_target_or_precision_or_a_bench_without_the_copy_is_not_read():
    docs = [bench(4, 5, 1.6, 0.99, target="pystdlib"), bench(3, 2, 1.0, 0.5, dtype="bfloat16")]
    no_copy = bench(4, 5, 1.6, 0.99)
    del no_copy["settings"]["quant"]
    assert bits_points([*docs, no_copy], "smollm2", "float32") == ()


def test_the_words_name_the_figures_and_where_they_were_measured():
    (point,) = bits_points([bench(4, 5, 1.62, 0.99)], "smollm2", "float32")
    assert point_words(point) == (
        "4 bits: α 0.99, c 0.40, K 5, τ 4.00, v(K) 1.10: 1.62× plain measured (1.82× predicted), 6 prompts on "
        "AMD EPYC (AVX2), float32, 1 thread"
    )


def test_two_machines_are_never_one_curve_and_the_first_shown_is_like_this_cpu():
    avx512 = bench(4, 4, 1.49, 0.97)
    avx512["environment"]["cpu_capability"] = "AVX512"
    machines = by_machine([bench(4, 5, 0.92, 0.98), bench(3, 2, 0.47, 0.38), avx512], "smollm2", "float32")
    assert {m: [(p.bits, p.speedup) for p in points] for m, points in machines.items()} == {
        "AMD EPYC (AVX2), float32, 1 thread": [(4, 0.92), (3, 0.47)],
        "AMD EPYC (AVX512), float32, 1 thread": [(4, 1.49)],
    }
    assert closest_machine(machines, "AVX512") == "AMD EPYC (AVX512), float32, 1 thread"
    assert closest_machine(machines, "DEFAULT") == "AMD EPYC (AVX2), float32, 1 thread"  # none like it: the first


def test_the_committed_benches_give_the_real_target_each_bits_from_8_to_2():
    machines = recorded_bits(ASSETS / "bench", "smollm2")
    points = machines["AMD EPYC (AVX2), float32, 1 thread"]
    assert [p.bits for p in machines["AMD EPYC (AVX512), float32, 1 thread"]] == [4]
    assert [p.bits for p in points] == [8, 4, 3, 2]
    by_bits = {p.bits: p for p in points}
    assert by_bits[4].alpha > 0.9 > by_bits[3].alpha > by_bits[2].alpha  # fewer bits, q further from p
