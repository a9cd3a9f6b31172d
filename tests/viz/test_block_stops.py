"""A round verified as a block, read back for the round page from hand-built numbers: the weights w_i, the stop tests,
the kept prefix (its longest passing stop, past a failed one), what token by token would keep with the same draws,
and the sentences and charts that say so."""

import pytest

from specviz.core.trace import ExtraToken, Position, Round, TokenProb
from specviz.viz import round_charts as charts
from specviz.viz.block_stops import block_stops, kept_drafts, kept_weight, token_by_token_kept
from specviz.viz.explain import block_judge_sentence, resolve_sentence

TOP = (TokenProb(5, " x", 0.6), TokenProb(6, " y", 0.4))


def position(i: int, p: float, q: float, h: float, u: float, verdict: str) -> Position:
    return Position(i, 5 + i, f" t{i}", q=q, p=p, ratio=h, u=u, accepted=verdict == "accepted", verdict=verdict,
                    p_top=TOP, q_top=TOP)  # fmt: skip


def block_round() -> Round:
    """Three drafts: the first stop fails (u 0.55 > h 0.3), the second passes, the third fails: two kept."""
    positions = (
        position(0, p=0.2, q=0.4, h=0.3, u=0.55, verdict="accepted"),  # w = 0.5
        position(1, p=0.9, q=0.3, h=0.6, u=0.4, verdict="accepted"),  # w = min(1, 0.5 · 3) = 1
        position(2, p=0.1, q=0.5, h=0.2, u=0.9, verdict="rejected"),  # w = 0.2, the last: h = w
    )
    extra = ExtraToken(9, " z", "correction", 0.7, 0.5, 0.25)
    return Round(0, positions, extra, TOP, (5, 6, 9), 1.0, 2.0, (9, 12), (9, 11))


def test_the_weights_stops_and_kept_prefix_are_the_blocks():
    stops = block_stops(block_round())
    assert [s.weight for s in stops] == pytest.approx([0.5, 1.0, 0.2])
    assert [(s.after, s.passed, s.kept, s.last) for s in stops] == [
        (1, False, True, False),  # its own stop failed, and it is kept: a later stop passed
        (2, True, True, False),
        (3, False, False, True),
    ]
    assert kept_drafts(stops) == 2 and kept_weight(stops) == pytest.approx(1.0)
    assert token_by_token_kept(block_round()) == 0  # u 0.55 > min(1, 0.2 / 0.4): token by token stops at once


def test_the_sentences_say_the_stop_test_the_kept_prefix_and_the_same_draws_token_by_token():
    r = block_round()
    first, second, third = (block_judge_sentence(r, s) for s in block_stops(r))
    assert "w = min(1, 1.000 · p/q) = 0.500" in first and "u = 0.550 > h: not here" in first
    assert "u = 0.400 ≤ h: it may" in second
    assert "**Kept**, though its own stop failed (a later one passed)" in first and "2 drafts here" in first
    assert "Token by token" not in first + second  # said once, at the last draft judged
    assert "**Not kept**: no stop from here on passes, so the block keeps the first 2 drafts" in third
    assert "h = 0.200 (= w: the last draft)" in third
    assert "Token by token, the same draws would have kept 0 drafts" in third and "in expectation" in third
    said = resolve_sentence(r, block=True)
    assert said.startswith("The block kept 2 drafts, so the correction '␣z' is drawn at position 3 from ")
    assert "norm(max(0, w·p − q)) with w = 1.000" in said and "u = 0.250" in said


def test_the_stop_chart_draws_h_against_u_and_says_kept_or_not():
    r = block_round()
    stops = block_stops(r)
    spec = charts.block_stop_chart(r.positions[0], stops[0]).to_dict()
    assert " ".join(spec["title"]["text"]) == "✓ KEPT · may the block end after draft 1?"
    assert "u = 0.550 > h = 0.300 (fails)" in " ".join(spec["title"]["subtitle"])
    rows = next(iter(spec["datasets"].values()))
    assert [(row["what"], row["value"], row["u"]) for row in rows] == [("h: end here", 0.3, 0.55)]
    assert charts.block_stop_chart(r.positions[2], stops[2]).to_dict()["title"]["text"][0].startswith("✗ NOT KEPT")
    residual = charts.residual_chart(r, kept_weight(stops)).to_dict()
    assert residual["title"]["text"][0] == "Residual norm(max(0, w·p − q))"
