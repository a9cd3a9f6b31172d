"""Chart builders are pure: check their specs (marks, encodings, data) with to_dict()."""

import pytest

from specviz.core.trace import Position, Round, TokenProb
from specviz.viz import round_charts as charts
from specviz.viz.explain import commit_sentence, judge_sentence, resolve_sentence
from specviz.viz.text import proposals_html, trace_html

P_TOP = (TokenProb(5, " x", 0.6), TokenProb(6, " y", 0.3), TokenProb(7, "\n", 0.1))
Q_TOP = (TokenProb(6, " y", 0.7), TokenProb(5, " x", 0.2), TokenProb(8, "(", 0.1))
REJECTED = Position(
    0, 6, " y", q=0.7, p=0.3, ratio=0.3 / 0.7, u=0.9, accepted=False, verdict="rejected", p_top=P_TOP, q_top=Q_TOP
)
ACCEPTED = Position(
    0, 5, " x", q=0.2, p=0.6, ratio=1.0, u=0.5, accepted=True, verdict="accepted", p_top=P_TOP, q_top=Q_TOP
)


def correction_round():
    from specviz.core.trace import ExtraToken

    return Round(
        0,
        (REJECTED,),
        ExtraToken(5, " x", "correction", 0.8, 0.6, 0.2),
        (TokenProb(5, " x", 0.8), TokenProb(7, "\n", 0.2)),
        (5,),
        1.0,
        2.0,
        (9, 8),
        (8, 8),
    )


def test_pq_chart_pairs_q_and_p_and_outlines_the_proposal():
    spec = charts.pq_chart(REJECTED).to_dict()
    assert spec["mark"]["type"] == "bar"
    assert spec["encoding"]["xOffset"]["field"] == "dist"
    assert spec["encoding"]["y"]["field"] == "prob"
    rows = next(iter(spec["datasets"].values()))
    proposal = [r for r in rows if r["proposal"]]
    assert {(r["dist"], r["prob"]) for r in proposal} == {("q (draft)", 0.7), ("p (target)", 0.3)}
    assert "title" in spec
    assert spec["encoding"]["tooltip"]


def test_acceptance_chart_marks_u_on_the_ratio_bar():
    spec = charts.acceptance_chart(REJECTED).to_dict()
    marks = [layer["mark"]["type"] if isinstance(layer["mark"], dict) else layer["mark"] for layer in spec["layer"]]
    assert marks == ["bar", "bar", "tick", "text"]
    assert spec["title"]["text"] == ["✗ REJECTED: u > min(1, p/q)"]  # a mark besides the colour
    assert " ".join(spec["title"]["subtitle"]).startswith("u = 0.900 > min(1, 0.300 / 0.700)")
    assert charts.acceptance_chart(ACCEPTED).to_dict()["title"]["text"][0].startswith("✓ ACCEPTED")


def test_every_title_line_is_short_enough_not_to_be_cut():
    r = correction_round()
    specs = [charts.pq_chart(REJECTED), charts.acceptance_chart(REJECTED), charts.residual_chart(r)]
    specs += [charts.cache_chart(r), charts.timing_chart((r,)), charts.accepted_length_chart((r,), 3)]
    for spec in (c.to_dict() for c in specs):
        assert all(len(line) <= charts.TITLE_CHARS for line in spec["title"]["text"])
        assert spec["title"]["limit"] == 0  # never an ellipsis


def test_residual_chart_highlights_the_correction():
    spec = charts.residual_chart(correction_round()).to_dict()
    rows = next(iter(spec["datasets"].values()))
    assert [r["chosen"] for r in rows] == [True, False]
    assert spec["layer"][0]["encoding"]["y"]["title"] == "residual probability"


def test_cache_timing_and_length_charts():
    r = correction_round()
    cache = charts.cache_frame(r, has_draft=True, before=(7, 7))
    target = cache[cache["row"].str.startswith("target")]
    # before the pass 7 slots; the verify pass adds the pending token and the draft (9); the rollback keeps 8
    counts = target[target["status"] != "cropped away"].groupby("row", sort=False)["kv"].max() + 1
    assert dict(counts) == {
        "target · before the pass": 7,
        "target · after the verify pass": 9,
        "target · after the rollback": 8,
    }
    assert set(target[target["row"] == "target · before the pass"]["status"]) == {"cached before"}
    dropped = target[target["status"] == "cropped away"]
    assert list(dropped["kv"]) == [8]
    assert list(dropped["label"]) == ["✗"]
    assert " y ✗" in set(target["label"].str.replace("␣", " "))  # the rejected draft, marked besides its colour
    layers = charts.cache_chart(r, before=(7, 7)).to_dict()["layer"]
    assert [layer["mark"]["type"] for layer in layers] == ["rect", "text"]
    timing = charts.timing_frame((r,))
    assert list(timing["ms"]) == [1.0, 2.0]
    lengths = charts.accepted_length_frame((r,), k=3)
    assert list(lengths["rounds"]) == [1, 0, 0, 0]
    assert charts.accepted_length_chart((r,), 3).to_dict()["mark"]["type"] == "bar"


def test_sentences_carry_the_numbers():
    assert "u = 0.900" in judge_sentence(REJECTED)
    assert "**Rejected**" in judge_sentence(REJECTED)
    assert "**Accepted**" in judge_sentence(ACCEPTED)
    r = correction_round()
    assert "residual probability 0.800" in resolve_sentence(r)
    assert f"a fresh uniform draw, u = {r.extra.u:.3f} (not the accept test's), picks it" in resolve_sentence(r)
    assert "from 9 to 8 tokens" in commit_sentence(r)


def test_html_escapes_token_text_and_shows_whitespace():
    r = correction_round()
    assert "␣y" in proposals_html(r)
    from specviz.core.settings import RunSettings
    from specviz.core.trace import Totals, Trace

    trace = Trace(RunSettings(), "<b>hi</b>", (1,), (r,), " x", Totals.of((r,), 1.0))
    html = trace_html(trace)
    assert "&#60;b&#62;hi&#60;/b&#62;" in html
    assert html.count('class="tok tok-correction"') == 1


@pytest.mark.parametrize("position", [REJECTED, ACCEPTED])
def test_pq_frame_always_contains_the_proposal(position):
    frame = charts.pq_frame(position)
    assert frame[frame["proposal"]]["token"].nunique() == 1


def test_a_real_vocabularys_token_labels_stand_on_two_lines_cut_to_their_band():
    """smollm2's long pieces and five-digit ids ran into each other at 1280 px: each label is its text over its id."""
    long = Position(0, 18342, " encounters", q=0.2, p=0.6, ratio=1.0, u=0.5, accepted=True, verdict="accepted")
    for spec in (charts.pq_chart(long).to_dict(), charts.residual_chart(correction_round()).to_dict()):
        axis = (spec.get("encoding") or spec["layer"][0]["encoding"])["x"]["axis"]
        assert axis["labelExpr"] == "split(replace(datum.label, ' #', '\\n#'), '\\n')" and axis["labelLimit"] <= 80
    label = next(r["token"] for r in charts.pq_rows(long) if r["proposal"])
    assert label.replace(" #", "\n#", 1).split("\n") == ["␣encounters", "#18342"]  # what the expression makes of it
