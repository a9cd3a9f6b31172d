"""The translation view of a round drafted across tokenizers: the draft's tokens, their text, the target's tokens,
what was masked, the realignment; user text inert; nothing for a round over one tokenizer."""

from __future__ import annotations

from specviz.core.trace import Crossing, Round, TokenProb
from specviz.viz.crossing import crossing_html


def _round(crossing: Crossing | None) -> Round:
    return Round(
        index=0,
        positions=(),
        extra=None,
        residual_top=(),
        committed=(),
        draft_ms=1.0,
        verify_ms=1.0,
        target_cache=(0, 0),
        draft_cache=(0, 0),
        crossing=crossing,
    )


def test_tli_round_shows_the_translation_the_mass_masked_and_the_realignment():
    c = Crossing(
        method="tli",
        draft_ids=(7, 8),
        draft_texts=(" re", "<b>"),
        target_ids=(70, 80),
        target_texts=(" re", "<b>"),
        outside=(False, False),
        lost=(0.25, 0.0),
        masked=((TokenProb(9, " reverse", 0.2),), ()),
        kept=10,
        dropped=2,
        fresh=3,
    )
    html = crossing_html(_round(c), {"intersection": 6114, "target_vocab": 49152})
    assert "6,114 of the target's 49,152 tokens" in html
    assert "0.250 of q masked" in html and "reverse" in html
    assert "dropped 2" in html and "reads 3 anew" in html
    assert "<b>" not in html and "&#60;b&#62;" in html  # the model's text is shown, never run as HTML


def test_slem_round_marks_draft_tokens_outside_the_intersection_and_the_seam():
    c = Crossing("slem", (1, 2), ("de", "f"), (5,), ("def",), (False, True), (), (), 4, 0, 1, seam=True)
    html = crossing_html(_round(c), {})
    assert "not a token the target spells" in html  # the second draft token, dashed
    assert "re-tokenized alone" in html
    assert crossing_html(_round(None), {}) == ""
