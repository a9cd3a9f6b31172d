"""The statistics module against hand-built per-round counts: every figure a view shows is computed here."""

import math

import pytest

from specviz.core import stats
from specviz.core.record import HF, RunRecord


def record(committed, drafted=None, accepted=None, judged=None, k=3, method="draft", ends=None, source="specviz"):
    ends = ends or tuple(0.01 * (i + 1) for i in range(len(committed)))
    return RunRecord(
        source,
        method,
        k,
        "p",
        "",
        tuple(range(sum(committed))),
        tuple(committed),
        drafted,
        accepted,
        judged,
        tuple(ends),
        wall_s=ends[-1],
    )


# Three rounds of K = 3:
#   round 1 accepts 1, rejects the 2nd (3rd unjudged): committed 2
#   round 2 accepts all 3, bonus: committed 4
#   round 3 a lookup that found only 1 draft, rejected: committed 1
SPEC = record(committed=(2, 4, 1), drafted=(3, 3, 1), accepted=(1, 3, 0), judged=(2, 3, 1))


def test_pooled_ratios():
    counts = stats.tally([SPEC])
    assert (counts.proposed, counts.accepted, counts.judged, counts.rounds, counts.committed) == (7, 4, 6, 3, 7)
    assert SPEC.alpha == pytest.approx(4 / 6)  # accepted / judged
    assert SPEC.acceptance_rate == pytest.approx(4 / 7)  # accepted / proposed: counts the unjudged draft
    assert SPEC.tau == pytest.approx(7 / 3)
    assert counts.drafts_per_round == pytest.approx(7 / 3)
    # pooled over runs is a ratio of sums, not a mean of ratios
    other = record(committed=(1,), drafted=(3,), accepted=(0,), judged=(1,))
    assert stats.alpha([SPEC, other]) == pytest.approx(4 / 7) != (4 / 6 + 0) / 2


def test_per_position_conditional_and_cumulative():
    rows = stats.per_position([SPEC])
    # position 1: reached in all 3 rounds, accepted in 2; position 2: reached in 2, accepted in 1;
    # position 3: reached in 1 (round 2), accepted in 1; drafted in rounds 1 and 2 only
    assert [(r["reached"], r["accepted"]) for r in rows] == [(3, 2), (2, 1), (1, 1)]
    assert [r["rate"] for r in rows] == pytest.approx([2 / 3, 1 / 2, 1])
    assert [r["cumulative"] for r in rows] == pytest.approx([2 / 3, 1 / 2, 1 / 2])
    assert all(r["overlap"] is None for r in rows)  # no p and q in a hand-built record
    assert stats.conditional_rates([SPEC]) == (pytest.approx((2 / 3, 1 / 2, 1.0)), (3, 2, 1))


def test_conditional_rates_stop_at_the_first_unreached_position():
    early = record(committed=(1, 1), drafted=(3, 3), accepted=(0, 0), judged=(1, 1))
    assert stats.conditional_rates([early]) == ((0.0,), (2,))


def test_histogram_and_vllm_names():
    assert stats.accepted_length_histogram([SPEC]) == [1, 1, 0, 1]
    m = stats.vllm_metrics([SPEC])
    assert (m["num_drafts"], m["num_draft_tokens"], m["num_accepted_tokens"]) == (3, 7, 4)
    assert m["num_accepted_tokens_per_pos"] == [2, 1, 1]
    assert m["mean_acceptance_length"] == pytest.approx(1 + 4 / 3)
    assert m["draft_acceptance_rate"] == pytest.approx(4 / 7)


def test_unreported_counts_stay_none():
    hf = record(committed=(3, 2), source=HF, method="hf_assisted")
    assert hf.alpha is None
    assert hf.acceptance_rate is None
    assert hf.proposed is None
    assert hf.tau == 2.5  # tokens per target pass is always measured
    assert stats.alpha([SPEC, hf]) is None  # one unknown makes the pool unknown
    assert stats.per_position([hf]) == []
    assert stats.accepted_length_histogram([hf]) == [0]


def test_plain_runs_have_no_acceptance():
    plain = record(committed=(1, 1, 1), drafted=(0, 0, 0), accepted=(0, 0, 0), judged=(0, 0, 0), k=0, method="plain")
    assert plain.alpha is None
    assert plain.acceptance_rate is None
    assert plain.tau == 1.0


def test_predicted_speedup_from_measured_tau_and_costs():
    assert stats.verify_cost_at((1.1, 1.2, 1.3), 0) == 1.0  # no drafts: a plain step
    assert stats.verify_cost_at((1.1, 1.2, 1.3), 2.4) == 1.2  # nearest measured K
    assert stats.verify_cost_at((1.1, 1.2, 1.3), 9) == 1.3  # capped at the largest measured K
    # tau 2.5 tokens per pass; 3 drafts at c = 0.1 plus a verify pass of 1.2 steps
    assert stats.predicted_speedup(2.5, 3, 0.1, 1.2) == pytest.approx(2.5 / 1.5)


def test_arrivals_and_divergence():
    burst = record(committed=(1, 4), ends=(0.010, 0.030))
    assert [round(g, 6) for g in stats.inter_token_latencies_ms(burst.arrivals())] == [20.0, 0.0, 0.0, 0.0]
    assert burst.ttft_s == 0.010
    assert round(burst.tokens_per_s) == 167
    assert stats.first_divergence((1, 2, 3), (1, 2, 3)) is None
    assert stats.first_divergence((1, 2, 3), (1, 9, 3)) == 1
    assert stats.first_divergence((1, 2, 3), (1, 2)) == 2


def test_bootstrap_interval_is_seeded_and_weighted():
    assert stats.bootstrap_ci([0.5, 0.7, 0.9], seed=1) == stats.bootstrap_ci([0.5, 0.7, 0.9], seed=1)
    values, weights = [0.5] * 10 + [0.9] * 10, [1] * 10 + [100] * 10
    low, high = stats.bootstrap_ci(values, weights)
    assert 0.85 < low <= high <= 0.9  # a pooled ratio: dominated by the prompts with many drafts judged
    low, high = stats.bootstrap_ci(values)
    assert 0.55 < low < 0.7 < high < 0.85  # the plain mean of the prompts
    assert all(math.isnan(x) for x in stats.bootstrap_ci([None, float("nan")]))
