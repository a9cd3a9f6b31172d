"""A record whose source reports totals only (a server's counters): every statistic comes from the same place."""

import pytest

from specviz.core import stats
from specviz.core.record import VLLM, RunRecord


def totals_record(proposed=12, accepted=7, judged=9, rounds=5, committed=12, drafting_rounds=3):
    tally = stats.Tally(proposed, accepted, judged, rounds, committed, drafting_rounds)
    return RunRecord(VLLM, "draft", 4, "p", "text", (), (), None, None, None, (), wall_s=2.0, totals=tally)


def per_round_record():
    # three rounds of K = 4: accepts 2 then rejects; accepts 4 (bonus); the prefill-like round drafts nothing
    return RunRecord(
        VLLM, "draft", 4, "p", "", tuple(range(9)), (1, 3, 5), (0, 4, 4), (0, 2, 4), (0, 3, 4), (), wall_s=1.0
    )


def test_totals_drive_every_statistic():
    rec = totals_record()
    assert (rec.proposed, rec.accepted, rec.judged, rec.rounds, rec.committed) == (12, 7, 9, 5, 12)
    assert rec.alpha == pytest.approx(7 / 9)
    assert rec.acceptance_rate == pytest.approx(7 / 12)
    assert rec.tau == pytest.approx(12 / 5)
    assert rec.tokens_per_s == pytest.approx(6.0)
    assert stats.per_position([rec]) == []
    assert stats.accepted_length_histogram([rec]) == [0]  # needs rounds
    names = stats.vllm_metrics([rec])
    assert names["num_drafts"] == 3
    assert names["mean_acceptance_length"] == pytest.approx(1 + 7 / 3)
    assert rec.to_dict()["totals"]["judged"] == 9


def test_pooling_totals_with_per_round_records_and_unknowns():
    pooled = stats.tally([totals_record(), per_round_record()])
    assert (pooled.proposed, pooled.accepted, pooled.judged, pooled.rounds, pooled.committed) == (20, 13, 16, 8, 21)
    assert pooled.drafting_rounds == 5  # the round that drafted nothing is not a draft
    unknown = stats.tally([totals_record(judged=None, rounds=None), per_round_record()])
    assert unknown.judged is None
    assert unknown.alpha is None
    assert unknown.tau is None
    assert unknown.acceptance_rate == pytest.approx(13 / 20)
