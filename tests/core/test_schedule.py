"""The K schedules as pure functions, on hand-built accept histories (each row says what must happen)."""

from dataclasses import replace

import pytest

from specviz.core import schedule as s
from specviz.core.settings import MAX_K, RunSettings
from specviz.errors import SettingsError


def test_heuristic_follows_transformers_rule():
    assert s.heuristic_next(4, drafted=4, accepted=4, ceiling=16) == 6  # all accepted: +2
    assert s.heuristic_next(4, drafted=4, accepted=3, ceiling=16) == 3  # one rejected: -1
    assert s.heuristic_next(1, drafted=1, accepted=0, ceiling=16) == 1  # floor of 1
    assert s.heuristic_next(15, drafted=15, accepted=15, ceiling=16) == 16  # ceiling (transformers has none)
    assert s.heuristic_next(6, drafted=2, accepted=2, ceiling=16) == 8  # the budget cut the round: all of 2 is full


def test_heuristic_state_over_a_history():
    state = s.ScheduleState.start(s.HEURISTIC, 4, MAX_K, 0.4, False)
    ks = []
    for accepted_all in (True, True, False, False, False, False, True):  # accept history
        ks.append(state.k)
        state = state.next_state(state.k, state.k if accepted_all else 0, ())
    assert ks == [4, 6, 8, 7, 6, 5, 4]
    assert state.k == 6


def test_pairs_keep_accepted_drafts_and_the_first_rejected_one():
    assert s.pairs_of_round((0.9, 0.8, 0.3, 0.2), 2) == ((0.9, True), (0.8, True), (0.3, False))  # 0.2 never judged
    assert s.pairs_of_round((0.9, 0.8), 2) == ((0.9, True), (0.8, True))  # all accepted: no negative


def test_fit_threshold_minimises_fpr_plus_three_fnr():
    accepted = [(0.9, True), (0.8, True), (0.7, True), (0.6, True)]
    rejected = [(0.5, False), (0.3, False), (0.2, False)]
    assert s.fit_threshold(tuple(accepted + rejected), 0.4) == 0.6  # separable: the lowest accepted confidence
    # (0.55, True) lies among the rejected: keeping it (threshold 0.55) costs FPR 0 + 0 = 0 < missing it (3 / 5)
    assert s.fit_threshold(tuple(accepted + rejected + [(0.55, True)]), 0.4) == 0.55
    # a positive below every negative: threshold 0.1 costs FPR 1, threshold 0.6 costs 3 * 1/5 = 0.6: 0.6 wins
    assert s.fit_threshold(tuple(accepted + rejected + [(0.1, True)]), 0.4) == 0.6


def test_fit_threshold_waits_for_enough_pairs_of_both_kinds():
    assert s.fit_threshold(((0.9, True), (0.1, False)), 0.4) == 0.4  # 5 pairs or fewer: unchanged
    assert s.fit_threshold(tuple((0.5 + i / 100, True) for i in range(9)), 0.4) == 0.4  # no rejection yet


def test_fit_threshold_never_stops_every_draft_at_three_to_one():
    """Every accepted draft was less confident than every rejected one. Stopping before all (scikit-learn's +inf
    threshold) misses every accept (cost 3); accepting all wastes every rejected draft (cost 1): the fit keeps drafting,
    at the lowest confidence seen."""
    pairs = ((0.1, True), (0.2, True), (0.15, True), (0.9, False), (0.8, False), (0.95, False))
    assert s.fit_threshold(pairs, 0.4) == 0.1


def test_stop_reasons():
    assert s.stop_reason(4, 4, 4) == s.STOP_CAP
    assert s.stop_reason(4, 4, 2) == s.STOP_CONFIDENCE
    assert s.stop_reason(6, 3, 3) == s.STOP_BUDGET
    assert s.stop_reason(4, 0, 0) == s.STOP_BUDGET


def test_confidence_step_records_the_threshold_and_its_refit():
    state = s.ScheduleState.start(s.CONFIDENCE, 4, MAX_K, 0.4, True)
    state = replace(state, pairs=((0.9, True), (0.8, True), (0.7, True), (0.2, False), (0.3, False)))
    step = state.after(4, 2, 1, (0.6, 0.35))  # 0.6 accepted, 0.35 (< 0.4) rejected: the draft stopped there
    assert (step.k, step.stop, step.threshold, step.confidences) == (4, s.STOP_CONFIDENCE, 0.4, (0.6, 0.35))
    assert step.next_threshold == 0.6  # refit from 7 pairs


@pytest.mark.parametrize(
    "kwargs, words",
    [
        (dict(k_schedule="sometimes"), "constant, heuristic, confidence"),
        (dict(k_schedule="confidence", confidence_threshold=1.5), "from 0 to 1"),
        (dict(k_schedule="confidence", confidence_threshold="high"), "from 0 to 1"),
        (dict(method="ngram", k_schedule="heuristic"), "Use it with draft, eagle"),
        (dict(method="tree", tree=(2, 1), k_schedule="confidence"), "tree"),
    ],
)
def test_bad_schedules_are_refused_with_a_message(kwargs, words):
    with pytest.raises(SettingsError, match=words):
        RunSettings(**kwargs)


def test_parse_threshold():
    assert s.parse_threshold("0.25") == (0.25, False)
    assert s.parse_threshold("Fitted") == (s.DEFAULT_THRESHOLD, True)
    with pytest.raises(SettingsError, match="fitted"):
        s.parse_threshold("most")


def test_settings_json_keeps_constant_runs_as_they_were():
    assert "k_schedule" not in RunSettings().to_dict()
    heuristic = RunSettings(k_schedule="heuristic")
    assert heuristic.to_dict()["k_schedule"] == "heuristic" and "confidence_threshold" not in heuristic.to_dict()
    assert RunSettings.from_dict(heuristic.to_dict()) == heuristic
    confidence = RunSettings(k_schedule="confidence", fit_threshold=True).to_dict()
    assert "tree" not in confidence and confidence["fit_threshold"] is True  # a chain's JSON holds no tree
    assert RunSettings(method="tree", tree=(2, 1)).to_dict()["tree"] == [2, 1]
    assert heuristic.draft_slots == MAX_K  # its K may grow: every round draws uniforms for the ceiling
    assert RunSettings(method="plain", k_schedule="heuristic").draft_slots == 0  # plain ignores a schedule
