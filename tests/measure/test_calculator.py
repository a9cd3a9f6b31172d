"""The calculator's decisions (measure/calculator.py): whose c and which verify cost the formulas use, and what is said
when a measurement is missing, implausible, or did not time the drafter."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from specviz import methods
from specviz.core.theory import VerifyCost
from specviz.engine.costs import C_DRAFTERS, MeasuredCosts
from specviz.measure import calculator as policy
from specviz.measure.calculator import VERIFY_MODES
from specviz.viz.notes import CAPTION, WARNING, Note

IDEAL_MODE, LINEAR_MODE, MEASURED_MODE = VERIFY_MODES
BUSY = MeasuredCosts("t", "d", "cpu", "float32", 30, 5, 0.0078, 0.077, (0.080, 1.15, 0.075, 0.08))  # v(1) 15x v(3)
QUIET = MeasuredCosts("t", "d", "cpu", "float32", 30, 5, 0.0005, 0.005, (0.0055, 0.006, 0.0065, 0.007))
EXIT_AT_4 = MeasuredCosts(
    "t", "d", "cpu", "float32", 30, 5, {"draft": 0.0005, "early_exit": 0.002}, 0.005, (0.0055, 0.006), exit_layer=4
)  # fmt: skip
TRIMMED = MeasuredCosts(
    "t", "d", "cpu", "float32", 30, 5, 0.0005, 0.005, (0.0055,), draft_vocab=2048, untrimmed_draft_step_s=0.001
)  # fmt: skip


def test_without_a_draft_or_heads_only_early_exit_and_the_lookups_are_offered():
    assert policy.offered_drafters(False, {}) == [methods.EARLY_EXIT, methods.QUANTIZED, methods.NGRAM, methods.SUFFIX]


def test_a_draft_and_a_head_found_beside_the_target_are_offered_in_the_registry_order():
    offered = policy.offered_drafters(True, {methods.EAGLE3: "beside"})
    assert offered == [
        methods.DRAFT,
        methods.EAGLE3,
        methods.EARLY_EXIT,
        methods.QUANTIZED,
        methods.NGRAM,
        methods.SUFFIX,
    ]


def test_what_is_not_offered_is_named_with_how_to_get_it_and_nothing_is_said_when_all_are():
    words = policy.not_offered_words(policy.offered_drafters(False, {methods.EAGLE: "x"}))
    assert words.startswith("Not offered for this pair: draft model, EAGLE-3 head, Medusa heads, MTP module (")
    assert "python -m specviz train-tiny" in words and "EAGLE-1" not in words
    assert policy.not_offered_words(list(C_DRAFTERS)) is None


@pytest.mark.parametrize(
    "picked, expected",
    [(methods.NGRAM, methods.NGRAM), (methods.MEDUSA, methods.EARLY_EXIT), (None, methods.EARLY_EXIT)],
)
def test_the_picker_choice_is_kept_only_while_offered(picked, expected):
    assert policy.chosen_drafter(picked, [methods.EARLY_EXIT, methods.NGRAM]) == expected


def test_implausible_or_missing_costs_are_never_used():
    assert BUSY.implausible and QUIET.implausible is None
    assert policy.usable(None) is None and policy.usable(BUSY) is None and policy.usable(QUIET) is QUIET
    assert policy.measured_c_of(BUSY, methods.DRAFT) is None
    assert policy.measured_c_of(BUSY, methods.NGRAM) is None  # not even a lookup's 0 from a broken measurement
    assert policy.measured_c_of(QUIET, methods.DRAFT) == pytest.approx(0.1)


def test_a_drafter_the_measurement_did_not_time_has_no_measured_c_and_a_lookup_has_zero():
    assert policy.measured_c_of(QUIET, methods.EAGLE) is None
    assert policy.measured_c_of(QUIET, methods.NGRAM) == 0.0


@pytest.mark.parametrize(
    "mode, ticked, drafter_c, expected",
    [
        (MEASURED_MODE, True, 0.1, True),
        (MEASURED_MODE, True, 0.0, True),  # a lookup's c of 0 is a measured c, not a missing one
        (MEASURED_MODE, False, 0.1, False),
        (MEASURED_MODE, True, None, False),
        (LINEAR_MODE, True, 0.1, False),
        (None, True, 0.1, False),
    ],
)
def test_the_measured_c_is_used_only_in_the_measured_mode_ticked_and_timed(mode, ticked, drafter_c, expected):
    assert policy.uses_measured_c(mode, ticked, drafter_c) is expected


def test_the_c_slider_names_the_measured_c_only_when_it_is_in_use():
    assert policy.c_slider_label(methods.DRAFT, 0.1234, True) == (
        "c (draft step / target step): the draft model's measured 0.123 is used"
    )
    assert policy.c_slider_label(methods.DRAFT, 0.1234, False) == "c (draft step / target step)"


def test_the_verify_cost_is_ideal_until_a_measurement_holds():
    assert policy.verify_cost(IDEAL_MODE, 0.2, QUIET) == VerifyCost.ideal()
    assert policy.verify_cost(LINEAR_MODE, 0.2, QUIET) == VerifyCost.linear(0.2)
    assert policy.verify_cost(MEASURED_MODE, 0.0, None) == VerifyCost.ideal()
    assert policy.verify_cost(MEASURED_MODE, 0.0, BUSY) == VerifyCost.ideal()
    assert policy.verify_cost(MEASURED_MODE, 0.0, QUIET) == QUIET.verify_cost()
    assert QUIET.verify_cost() != VerifyCost.ideal()


def test_the_notes_say_missing_implausible_untimed_and_another_exit_layer():
    none_yet = policy.measurement_note(None, methods.DRAFT, 6)
    assert none_yet.level == WARNING and none_yet.text.startswith("No measurement yet")
    busy = policy.measurement_note(BUSY, methods.DRAFT, 6)
    assert busy.level == WARNING and f"cannot be true: {BUSY.implausible} Until" in busy.text
    untimed = policy.measurement_note(QUIET, methods.MEDUSA, 6)
    assert untimed.level == WARNING and "did not time the Medusa heads's step" in untimed.text
    elsewhere = policy.measurement_note(EXIT_AT_4, methods.EARLY_EXIT, 6)
    assert elsewhere == Note(CAPTION, "Measured at E = 4: press Measure again for E = 6.")
    assert policy.measurement_note(EXIT_AT_4, methods.EARLY_EXIT, 4) is None
    assert policy.measurement_note(QUIET, methods.DRAFT, 6) is None


def test_the_draft_step_metric_says_no_model_run_not_timed_or_milliseconds():
    assert policy.draft_step_value(0.0, None) == "no model run"
    assert policy.draft_step_value(None, None) == "not timed"
    assert policy.draft_step_value(0.1, 0.0005) == "0.50 ms"


def test_early_exit_c_is_put_beside_e_over_l_when_l_is_known():
    words = policy.whose_c(EXIT_AT_4, methods.EARLY_EXIT, 30)
    assert words == (
        "c of early exit (self-speculation) at E = 4: its first E layers + LM head / one target step "
        "(E/L = 4/30 = 0.13)"
    )
    assert policy.whose_c(EXIT_AT_4, methods.EARLY_EXIT, None).endswith("/ one target step")


@pytest.mark.parametrize(
    "drafter, expected",
    [
        (methods.NGRAM, "c of n-gram lookup (prompt lookup): 0, a search over tokens already known on the host"),
        (methods.EAGLE, "c of the EAGLE-1 head: one head step (its layer + an LM head) / one target step"),
        (methods.DRAFT, "c of the draft model: one draft step / one target step"),
    ],
)
def test_whose_c_says_what_the_ratio_is_for_each_kind_of_drafter(drafter, expected):
    assert policy.whose_c(QUIET, drafter, 30).startswith(expected)


def test_a_trimmed_draft_names_its_vocabulary_and_the_whole_draft_c_only_for_the_draft_model():
    caption = policy.costs_caption(TRIMMED, methods.DRAFT)
    assert caption.startswith("t ← d · cpu · float32 · median of 5 · draft proposing from its 2048 most frequent")
    assert caption.endswith("(the whole draft: c = 0.200)")
    assert policy.costs_caption(TRIMMED, methods.NGRAM) == "t ← d · cpu · float32 · median of 5"


def test_the_tree_section_is_flat_until_measured_and_then_says_how_far_the_timings_reach():
    assert policy.tree_verify_note(None).level == WARNING
    reach = policy.tree_verify_note(QUIET)
    assert reach.level == CAPTION and reach.text.startswith("Measured for up to 4 drafted tokens")


@dataclass(frozen=True)
class Run:  # the counts stats.conditional_rates reads
    k: int
    per_round_judged: tuple[int, ...]
    per_round_accepted: tuple[int, ...]
    per_round_committed: tuple[int, ...] = ()
    per_round_drafted: tuple[int, ...] | None = None
    overlap_by_position: tuple = ()
    totals: None = None


def test_rates_from_runs_fill_the_box_and_say_how_many_drafts_reached_each_position():
    runs = [Run(2, (2, 1), (2, 0)), Run(2, (2,), (1,))]  # position 1: 3 reached, 2 accepted; position 2: 2, 1
    rates = policy.rates_from_records(runs)
    assert rates.text == "0.667, 0.500"
    assert rates.counts == (3, 2)
    assert rates.note == "From 2 workload prompts at T = 1: drafts reaching each position [3, 2]."


def test_break_even_help_names_the_smallest_over_every_k_or_says_none_pays():
    assert policy.break_even_help(4, 16, 0.25, 2).endswith("Over every K = 1..16 the smallest is 0.250, at K = 2")
    assert policy.break_even_help(4, 16, None, None).endswith("smallest is none: no K pays")


def test_the_cpu_tree_words_give_every_measured_tau():
    words = policy.cpu_tree_words()
    assert words.startswith("**Measured on this CPU** (") and words.count(";") >= 2
