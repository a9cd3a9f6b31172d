"""Predictions, intervals and the go / no-go from hand-built runs: each figure means what the page says it means."""

import pytest

from specviz.core import stats
from specviz.core.record import RunRecord
from specviz.core.theory import expected_tokens
from specviz.engine.costs import MeasuredCosts
from specviz.measure.predict import predict
from specviz.measure.recommend import MIN_PROMPTS, recommend
from specviz.measure.summary import summarize
from specviz.measure.workload import PairedRun


def costs(c=0.2, verify=(1.1, 1.2, 1.3, 1.4)):
    step = 0.01
    draft = None if c is None else c * step
    return MeasuredCosts("t", "d", "cpu", "float32", 20, 5, draft, step, tuple(v * step for v in verify))


def run(method="draft", k=4, committed=(5, 2), drafted=(4, 4), accepted=(4, 1), wall=0.02, prompt="p"):
    judged = tuple(min(a + 1, d) for a, d in zip(accepted, drafted))
    ends = tuple(wall * (i + 1) / len(committed) for i in range(len(committed)))
    return RunRecord(
        "specviz", method, k, prompt, "", tuple(range(sum(committed))), committed, drafted, accepted, judged, ends, wall
    )


def plain(wall=0.03, n=7, prompt="p"):
    return run("plain", 0, (1,) * n, (0,) * n, (0,) * n, wall, prompt)


def test_a_lookup_that_drafts_fewer_than_k_is_predicted_from_its_tau_not_from_e_alpha_k():
    # an n-gram lookup asked for K = 4 found 4 drafts in one round and none in two others
    lookup = run("ngram", 4, committed=(5, 1, 1), drafted=(4, 0, 0), accepted=(4, 0, 0))
    prediction = predict([lookup], costs())
    assert prediction.c == 0.0
    assert prediction.drafts_per_round == pytest.approx(4 / 3)
    # each round priced at v(its drafts): v(4) once, and a plain step for each round that drafted none; not v at the
    # mean drafts per round (v(1)), nor v(4) for every round
    assert prediction.verify_cost == pytest.approx((1.4 + 1 + 1) / 3)
    assert prediction.speedup == pytest.approx((7 / 3) / ((1.4 + 1 + 1) / 3))
    as_if_k_every_round = expected_tokens(lookup.alpha, 4) / 1.4
    assert as_if_k_every_round > 1.4 * prediction.speedup  # what the old formula claimed


def test_impossible_costs_give_no_prediction():
    noisy = costs(verify=(0.6, 1.2, 1.3, 1.4))  # a pass over 2 tokens cheaper than one step: the machine was busy
    assert "cannot" in noisy.implausible
    assert predict([run()], noisy) is None
    assert costs().implausible is None
    assert predict([run()], costs()) is not None
    busy = costs(verify=(4.0, 13.3, 13.2, 3.9))  # timed while the machine was swamped (seen on a loaded CI box)
    assert "busy" in busy.implausible
    assert predict([run()], busy) is None


def test_the_nested_interval_carries_the_noise_within_prompts():
    steady = [[1.2, 1.2], [1.3, 1.3], [1.25, 1.25], [1.22, 1.22], [1.28, 1.28]]
    noisy = [[0.9, 1.5], [1.0, 1.6], [0.95, 1.55], [0.92, 1.52], [0.98, 1.58]]  # same means, noisy clocks
    lo_s, hi_s = stats.bootstrap_ci_nested(steady)
    lo_n, hi_n = stats.bootstrap_ci_nested(noisy)
    assert hi_n - lo_n > 3 * (hi_s - lo_s)
    assert stats.bootstrap_ci_nested(steady, seed=3) == stats.bootstrap_ci_nested(steady, seed=3)


def paired(speedups, method="draft", k=4, prompt="p"):
    """A result whose repeats measured these speedups (plain at 7 tokens in 0.03 s)."""
    plains = tuple(plain(prompt=prompt) for _ in speedups)
    runs = tuple(run(method, k, wall=7 / (s * (7 / 0.03)), prompt=prompt) for s in speedups)
    return PairedRun(runs, plains)


def test_too_few_prompts_get_no_verdict():
    results = [paired([1.5, 1.6], prompt=f"p{i}") for i in range(MIN_PROMPTS - 1)]
    advice = recommend(results, "d", 0.0, costs())
    assert advice.go is None
    assert f"at least {MIN_PROMPTS} prompts" in advice.reason
    assert advice.measured_speedup == pytest.approx(1.55)


def test_go_and_no_go_and_the_optimism_of_picking_the_best():
    fast = [paired([1.5, 1.6], prompt=f"p{i}") for i in range(MIN_PROMPTS)]
    advice = recommend(fast, "d", 0.0, costs())
    assert advice.go is True
    assert "optimistic" not in advice.reason  # one setting: nothing was picked
    slow = [paired([0.8, 0.9], k=2, prompt=f"p{i}") for i in range(MIN_PROMPTS)]
    advice = recommend(fast + slow, "d", 0.0, costs())
    assert advice.go is True
    assert advice.k == 4
    assert "best of 2 settings" in advice.reason
    assert "optimistic" in advice.reason
    advice = recommend(slow, "d", 0.0, costs())
    assert advice.go is False
    assert "allow only" in advice.reason
    assert advice.predicted_speedup is not None


def test_a_source_without_a_plain_run_measures_no_speedup():
    server_only = [PairedRun((run(prompt=f"p{i}"),)) for i in range(MIN_PROMPTS)]
    assert server_only[0].speedup is None
    assert server_only[0].plain_tokens_per_s is None
    row = next(r for r in summarize(server_only) if r["tag"] == "all")
    assert row["speedup"] is None
    assert row["alpha"] == pytest.approx(5 / 6)  # accepted 4 + 1, judged 4 + 2
    assert recommend(server_only, None, 0.0).go is None


def test_summary_rows_carry_the_prediction():
    row = next(r for r in summarize([paired([1.2])], costs()) if r["tag"] == "all")
    assert row["predicted_speedup"] == pytest.approx(predict([paired([1.2]).run], costs()).speedup)


def test_hugging_face_lanes_are_predicted_with_the_whole_draft_when_specviz_trims_it():
    import dataclasses

    trimmed = dataclasses.replace(costs(c=0.15), draft_vocab=1024, untrimmed_draft_step_s=0.25 * 0.01)
    assert trimmed.c == pytest.approx(0.15)
    assert trimmed.untrimmed_c == pytest.approx(0.25)
    ours = predict([run("draft")], trimmed)
    theirs = predict([run("hf_assisted")], trimmed)  # generate() runs the draft with its full LM head
    assert ours.c == pytest.approx(0.15)
    assert theirs.c == pytest.approx(0.25)
    assert costs(c=0.2).untrimmed_c == pytest.approx(0.2)  # not trimmed: the same draft


def test_every_verdict_states_its_threshold_and_a_no_go_says_which_part_failed():
    """A past bug: a NO-GO at 1.10x with its interval above 1 named no threshold."""
    from specviz.measure.recommend import GO_SPEEDUP, RULE

    fast = [paired([1.5, 1.6], prompt=f"p{i}") for i in range(MIN_PROMPTS)]
    assert RULE in recommend(fast, "d", 0.0, costs()).reason
    under = recommend([paired([1.02, 1.06], prompt=f"p{i}") for i in range(MIN_PROMPTS)], "d", 0.0, costs())
    assert under.go is False
    assert RULE in under.reason
    assert f"under {GO_SPEEDUP:.2f}x" in under.reason
    wide = [paired([0.7, 1.9], prompt=f"p{i}") for i in range(MIN_PROMPTS)]
    noisy = recommend(wide, "d", 0.0, costs())
    assert noisy.measured_speedup >= GO_SPEEDUP
    assert noisy.go is False
    assert "interval reaches 1.00x or below" in noisy.reason
