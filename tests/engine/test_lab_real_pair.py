"""The exactness lab on a real pair (specviz.engine.lab): plain and speculative samples agree, greedy is identical."""

import pytest
import torch

from specviz.core.sampling import SamplingSettings
from specviz.engine import lab as engine_lab
from specviz.engine.lab import greedy_equivalence, two_token_samples
from specviz.errors import SettingsError


def test_real_pair_two_token_samples_agree(load):
    pair = load("llama-target", "llama-truncated")
    calls = []
    result = two_token_samples(
        pair,
        "def add(a, b):",
        samples=100,
        k=2,
        sampling=SamplingSettings(1.0, top_k=4),
        seed=0,
        time_budget_s=600.0,  # the default 20 s cut this short on a busy machine; the budget has its own test below
        on_progress=lambda done, total: calls.append((done, total)),
    )
    assert result.samples == 100
    assert sum(result.speculative.values()) == 100
    assert not result.stopped_early
    assert all(len(key) == 2 for key in result.plain)
    assert calls[-1] == (100, 100)
    assert result.chi2.dof >= 3
    assert result.chi2.p_value > 1e-6
    rows = result.table(pair.token_texts, top=5)
    assert len(rows) == 5
    assert {"tokens", "plain", "speculative"} <= rows[0].keys()


def test_real_pair_sampling_respects_the_time_budget_and_refuses_greedy(load):
    pair = load("llama-target", "llama-truncated")
    quick = two_token_samples(pair, "x = 1", samples=1000, sampling=SamplingSettings(1.0), time_budget_s=1e-4)
    assert quick.stopped_early
    assert 1 <= quick.samples < 1000
    with pytest.raises(SettingsError, match="temperature"):
        two_token_samples(pair, "x = 1", sampling=SamplingSettings(0.0))
    with pytest.raises(SettingsError, match="draft"):
        two_token_samples(load("llama-target"), "x = 1")


@pytest.mark.parametrize("draft", ["llama-truncated", "llama-target", "llama-random"])
def test_greedy_equivalence_is_identical(load, draft):
    check = greedy_equivalence(load("llama-target", draft), "def add(a, b):", k=4, max_new_tokens=24)
    assert check.identical
    assert check.plain_ids == check.speculative_ids
    assert check.within_rounding is None
    assert check.dtype == "float32"
    assert len(check.plain_ids) == 24


def test_a_divergence_is_judged_by_both_paths_margins_against_the_precision():
    def check(plain_margin, spec_margin, dtype=torch.float32, size=10.0):
        tolerance = engine_lab.ROUNDING_ULPS * engine_lab.ulp(size, dtype)
        return engine_lab.GreedyCheck("p", 4, "x", (1, 2), (1, 3), 1, "a", "b", plain_margin, spec_margin, tolerance)

    assert engine_lab.ulp(10.0, torch.float32) == 2.0**-20  # 10 lies in [8, 16): spacing 8 * 2^-23
    assert engine_lab.ulp(10.0, torch.bfloat16) == 2.0**-4  # bfloat16 keeps 7 bits: 8 * 2^-7
    assert check(2e-6, 3e-6).within_rounding  # the passes moved 5e-6 apart: within 16 float32 ulps (1.5e-5)
    assert not check(1e-3, 2e-3).within_rounding  # a 3e-3 swing is no float32 rounding: a bug
    assert check(0.3, 0.5, torch.bfloat16).within_rounding  # the same swing in bfloat16 (16 ulps = 1.0) is rounding
