"""No GO on a speedup that cannot be. A measured speedup above τ (every target pass costs at least a
plain step) earns no verdict, by the same rule the race's K sweep flags; a verdict measured while the step costs say
the machine was busy is qualified, in words; a mean above the pooled τ that its prompts' own τ allow is not flagged."""

import pytest
from test_ranking import paired

from specviz.engine.costs import MeasuredCosts
from specviz.measure import workload_policy as policy
from specviz.measure.recommend import MIN_PROMPTS, judge, recommend
from specviz.measure.timing import above_tau, implausible_points
from specviz.measure.verdict_rule import speedup_doubt
from specviz.viz.notes import SUCCESS, WARNING


def costs(verify=(1.1, 1.2, 1.3, 1.4)):
    step = 0.01
    return MeasuredCosts("t", "d", "cpu", "float32", 20, 5, {"draft": 0.002}, step, tuple(v * step for v in verify))


def missed(speedups, prompt, tag="qa"):
    """An n-gram lookup that found nothing to draft: 7 plain steps, τ 1.00, whatever its clock said."""
    return paired("ngram", 4, speedups, prompt, tag, drafted=(0,) * 7, accepted=(0,) * 7)


def test_a_go_on_a_speedup_above_tau_is_withheld_by_the_race_sweeps_rule():
    # Spec-Bench QA on smollm2: n-gram, α 0.00, τ 1.00, measured 1.13x over 5 prompts: a GO by the rule's numbers
    results = [missed((1.12, 1.14), f"q{i}") for i in range(MIN_PROMPTS)]
    advice = recommend(results, "d", 0.0, costs())
    assert advice.measured_speedup == pytest.approx(1.13)
    assert advice.speedup_ci[0] > 1.0  # the figures alone would pass
    assert advice.go is None  # withheld: a figure that cannot be true earns no GO
    assert "1.13× is above τ = 1.00, more than any pass can give" in advice.reason
    assert "a figure that cannot be true earns no GO" in advice.reason
    assert "quieter machine" in advice.reason
    assert not advice.offered  # no vLLM config for it
    assert advice.to_dict()["doubts"] == list(advice.doubts) and advice.doubts
    # the race's K sweep flags the same figure at the same τ: one rule
    assert above_tau(1.13, 1.0)
    assert implausible_points([{"k": 4, "speedup": 1.13, "tau": 1.0}]) == [
        "K = 4: 1.13× is above τ = 1.00, more than any pass can give"
    ]
    note = policy.headline(advice.go, advice.reason, True, "", bool(advice.doubts))
    assert note.level == WARNING and note.text.startswith("No verdict yet.")


def test_a_no_go_and_a_too_small_group_above_tau_say_so_too():
    slow = [missed((1.05, 1.06), f"q{i}") for i in range(MIN_PROMPTS)]  # under 1.10x: a NO-GO, yet above τ 1.00
    advice = recommend(slow, "d", 0.0, costs())
    assert advice.go is False
    assert "above τ = 1.00" in advice.reason
    few = recommend([missed((1.13,), "q0")], "d", 0.0, costs())  # the translation prompt: 1.13x at τ 1.00
    assert few.go is None and "at least 5 prompts" in few.reason and "above τ = 1.00" in few.reason


def test_a_go_while_the_step_costs_say_the_machine_was_busy_is_qualified_in_words():
    fast = [paired("draft", 4, (1.5, 1.6), f"c{i}", "code") for i in range(MIN_PROMPTS)]  # τ 3.5: can be true
    assert recommend(fast, "d", 0.0, costs()).doubts == ()
    busy = costs(verify=(0.87, 1.2, 1.3, 1.4))  # a verify pass timed under a one-token step
    advice = recommend(fast, "d", 0.0, busy)
    assert advice.go is True  # the figure can be true: qualified, not withheld
    assert "verify pass over 2 tokens timed at 0.87 of a one-token step" in advice.reason
    assert "Its timing is in doubt" in advice.reason
    note = policy.headline(advice.go, advice.reason, True, "", bool(advice.doubts))
    assert note.level == WARNING and note.text.startswith("GO, in doubt: ")
    plain_go = recommend(fast, "d", 0.0, costs())
    assert policy.headline(plain_go.go, plain_go.reason, True, "", bool(plain_go.doubts)).level == SUCCESS


def test_each_tag_is_held_to_the_same_rule():
    results = [paired("draft", 4, (1.5, 1.6), f"c{i}", "code") for i in range(MIN_PROMPTS)]
    results += [missed((1.2, 1.2), f"p{i}", "prose") for i in range(MIN_PROMPTS)]  # ngram on prose: 1.20x at τ 1
    results += [paired("draft", 4, (0.9, 0.9), f"p{i}", "prose") for i in range(MIN_PROMPTS)]
    verdicts = {v.tag: v for v in judge(results, "d", 0.0, costs())}
    assert verdicts["code"].go is True and not verdicts["code"].doubts
    assert verdicts["prose"].go is None and "above τ = 1.00" in verdicts["prose"].reason
    note = policy.tag_verdict(verdicts["prose"].go, "prose", verdicts["prose"].reason, True)
    assert note.level == WARNING


def test_the_bound_is_the_mean_of_the_prompts_own_tau_not_the_pooled_one():
    # a prompt the lookup missed (τ 1.00, 0.95x) and one it drafted well (τ 3.50, 2.50x): the mean 1.73x is above the
    # pooled τ (14 tokens in 9 passes: 1.56), but each prompt is within its own τ, so the mean can be true
    results = [missed((0.95,), "a"), paired("ngram", 4, (2.5,), "b", "qa")]
    assert speedup_doubt("n-gram lookup, K = 4", results).reasons == ()
    # one prompt above its own τ, the mean within: a qualm, not a withheld verdict
    one = [missed((1.2,), "a"), paired("ngram", 4, (2.5,), "b", "qa")]
    doubt = speedup_doubt("n-gram lookup, K = 4", one)
    assert doubt.impossible is None
    assert doubt.qualms == ("n-gram lookup, K = 4: 1 prompt of 2 measured above its own τ (e.g. 1.20x at τ 1.00), "
                            "more than any pass can give",)  # fmt: skip
