"""The exactness lab's decisions and words (viz/exactness.py): tables as rows, which draft a section uses, the public
caps on the real pair's runs, and the verdicts' sentences."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from specviz.core import lab
from specviz.viz import exactness as words
from specviz.viz.exactness import BUG_DRAFTS
from specviz.viz.lab_charts import REAL_PAIR_LEVEL
from specviz.viz.notes import CAPTION, ERROR, SUCCESS, WARNING


def test_a_table_goes_to_the_editor_and_back_unchanged():
    rows = words.rows_of(words.table_frame(lab.SHOP_TARGET))
    assert rows == tuple(tuple(float(x) for x in row) for row in lab.SHOP_TARGET)
    assert list(words.table_frame(lab.SHOP_TARGET).index) == list(lab.ROWS)


def test_the_poor_draft_or_the_edited_table_is_used():
    edited = ((0.25,) * 4,) * 4
    assert words.draft_rows_for(BUG_DRAFTS[1], edited) is edited
    assert words.draft_rows_for(BUG_DRAFTS[0], edited) == words.rows_of(words.table_frame(lab.POOR_DRAFT))


def test_alpha_words_name_each_event():
    assert words.alpha_words([0.5] * len(lab.ROWS)).startswith(f"α = Σ min(p, q) after each event: {lab.ROWS[0]} 0.50")


def test_a_switch_says_where_it_was_seen_only_when_it_was():
    assert words.variant_words("x", "does y", "") == "x: does y."
    assert words.variant_words("x", "does y", "a paper") == "x: does y. Where: a paper."


def test_a_listed_tree_sampler_needs_no_extra_check_and_a_combination_does():
    listed = lab.TREE_VARIANTS[0]
    assert words.tree_extra(listed) == ()
    broken = lab.tree_variant(lab.TOP_B, False, True)
    assert broken.key not in lab.TREE_VARIANTS_BY_KEY  # both negative controls at once: not a listed sampler
    assert words.tree_extra(broken) == (lab.TOP_B, False, True)


def test_the_tree_verdict_is_a_success_only_when_exact():
    variant = lab.TREE_VARIANTS[0]
    exact = words.tree_verdict(lab.EXACT_VERDICT, 0.0, variant, 3)
    assert exact.level == SUCCESS and exact.text.startswith("Exact to 1e-9 over 4-event sequences. ")
    biased = words.tree_verdict("biased", 0.0123, variant, 3)
    assert biased.level == WARNING and biased.text.startswith("Not exact: the output is 0.0123 in total variation")
    assert biased.text.endswith(f"{variant.label}: {variant.why}.")


def test_the_public_caps_narrow_the_real_pair_choices_and_unlimited_ones_do_not():
    tight = words.caps(max_lab_samples=200, max_lab_seconds=20, max_new_tokens=64, max_k=8)
    assert tight.samples == (50, 100, 200) and tight.samples_default == 200
    assert (tight.longest_s, tight.budget_default, tight.most_tokens, tight.tokens_default) == (20, 20, 64, 48)
    wide = words.caps(max_lab_samples=100_000, max_lab_seconds=3600, max_new_tokens=4096, max_k=16)
    assert wide.samples[-1] == 2000 and wide.samples_default == 300
    assert (wide.longest_s, wide.budget_default, wide.most_tokens, wide.k_top, wide.k_default) == (120, 30, 128, 8, 4)
    tiny = words.caps(max_lab_samples=50, max_lab_seconds=1, max_new_tokens=1, max_k=2)
    assert (tiny.samples, tiny.longest_s, tiny.most_tokens, tiny.k_top, tiny.k_default) == ((50,), 5, 8, 2, 2)


REAL = {"samples": 300, "requested": 300, "p_value": 0.4, "dof": 5, "statistic": 4.0, "stopped_early": False}


def test_the_real_pair_notes_warn_when_stopped_early_or_too_few_samples():
    notes = words.real_notes(REAL)
    assert [n.level for n in notes] == [CAPTION, CAPTION] and notes[-1].text == "Speculative side: the draft model."
    cut = words.real_notes(REAL | {"samples": 40, "stopped_early": True, "dof": 0, "side": "early exit"})
    assert [n.level for n in cut] == [WARNING, WARNING, CAPTION]
    assert cut[1].text.startswith("Too few samples for a test") and cut[2].text == "Speculative side: early exit."


def test_the_real_verdict_differs_only_at_or_below_the_level():
    assert "**the two samples differ**" in words.real_verdict(REAL_PAIR_LEVEL)
    assert "**no difference detected**" in words.real_verdict(REAL_PAIR_LEVEL * 2)


@dataclass(frozen=True)
class Check:  # the fields engine.lab.GreedyCheck gives the words
    identical: bool = False
    plain_ids: tuple = (1, 2, 3)
    k: int = 4
    first_divergence: int = 6
    plain_token: str = " a"
    speculative_token: str = " b"
    within_rounding: bool | None = True
    plain_margin: float = 1e-3
    speculative_margin: float = 2e-3
    tolerance: float = 4e-3
    rounding_ulps: int = 4
    dtype: str = "bfloat16"


def test_identical_greedy_paths_are_a_success():
    note = words.greedy_note(Check(identical=True))
    assert note.level == SUCCESS and note.text == "identical: 3 tokens, token for token (K = 4)."


@pytest.mark.parametrize(
    "within, ending",
    [
        (True, ". Within rounding: passes of different shapes round differently; not a bug."),
        (False, ". Wider than rounding can explain: a bug."),
        (None, " (one path stopped at EOS there)."),
    ],
)
def test_a_divergence_says_where_and_whether_rounding_explains_it(within, ending):
    note = words.greedy_note(Check(within_rounding=within))
    assert note.level == ERROR
    assert note.text.startswith("diverged at output token 7: plain ' a' vs speculative ' b'")
    assert note.text.endswith(ending)
    assert ("3.00e-03 apart, against 4.00e-03 = 4 units in the last place of bfloat16" in note.text) == (
        within is not None
    )
