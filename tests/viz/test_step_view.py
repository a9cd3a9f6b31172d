"""A step as data (viz.step_view): every step of the bundled chain and tree traces builds, in every view, with its
blocks in rows the page and the player can lay out; the numbers and verdicts are the trace's own."""

from dataclasses import replace
from pathlib import Path

import pytest

from specviz import methods
from specviz.core.trace import Trace
from specviz.core.trace_json import trace_from_json
from specviz.viz import step_view as sv
from specviz.viz import steps
from specviz.viz.layout import LECTURE_TITLE_SIZE

TRACES = Path(__file__).resolve().parents[2] / "assets" / "traces"
VIEWS = [sv.ViewOptions(lecture, focus) for lecture in (False, True) for focus in (False, True)]


def load(name: str) -> Trace:
    return trace_from_json((TRACES / name).read_text())


@pytest.mark.slow
@pytest.mark.parametrize("name", ["early-rejection-residual.json", "tree-sibling-accepted.json"])
def test_every_step_builds_in_every_view_and_its_rows_lay_out(name):
    trace, memo = load(name), {}
    for cursor in list(steps.moments(trace))[:24]:
        step = steps.current_step(trace, cursor)
        for options in VIEWS:
            view = sv.step_view(trace, cursor, options, memo)
            assert view.title.startswith(f"Round {cursor.round + 1} of {len(trace.rounds)} · ")
            assert view.moment == steps.url_params(trace, cursor)
            assert all(b.kind in sv.KINDS and b.place in sv.PLACES and b.section in sv.SECTIONS for b in view.blocks)
            laid = sv.rows(view.blocks)
            assert sum(len(c.blocks) for row in laid for c in row.columns) == len(view.blocks)  # none lost
            headings = [b.content for b in view.blocks if b.kind == sv.HEADING]
            if options.focus:
                assert not headings and not [b for b in view.blocks if b.section == sv.TOTALS]
                assert any('class="phase-strip"' in b.content for b in view.blocks if b.kind == sv.HTML)
            elif step.phase != steps.JUDGE:
                assert headings[-1] == steps.PHASE_TITLES[step.phase]


def test_a_chain_judge_step_says_the_verdict_with_its_draw_beside_two_charts():
    trace = load("early-rejection-residual.json")
    cursor = next(c for c in steps.moments(trace) if steps.current_step(trace, c).phase == steps.JUDGE)
    pos = trace.rounds[cursor.round].positions[steps.current_step(trace, cursor).position]
    view = sv.step_view(trace, cursor)
    judged = next(row for row in sv.rows(view.blocks) if [c.place for c in row.columns] == [sv.LEFT, sv.RIGHT])
    left, right = judged.columns
    assert [b.kind for b in left.blocks] == [sv.CHART]
    assert [b.kind for b in right.blocks] == [sv.CHART, sv.MARKDOWN]
    verdict = "**Accepted**" if pos.accepted else "**Rejected**"
    assert verdict in right.blocks[1].content and f"{pos.u:.3f}" in right.blocks[1].content


def test_the_focus_view_puts_a_tree_judgement_beside_its_tree():
    trace = load("tree-sibling-accepted.json")
    cursor = next(c for c in steps.moments(trace) if steps.current_step(trace, c).phase == steps.JUDGE)
    laid = sv.rows(sv.step_view(trace, cursor, sv.ViewOptions(focus=True)).blocks)
    beside = next(row for row in laid if len(row.columns) == 2)
    assert [(c.place, c.width) for c in beside.columns] == [(sv.TREE, 3.0), (sv.BESIDE_TREE, 2.0)]
    assert beside.columns[0].blocks[0].kind == sv.CHART
    full = sv.rows(sv.step_view(trace, cursor).blocks)
    assert not any(c.place in (sv.TREE, sv.BESIDE_TREE) for row in full for c in row.columns)


def test_lecture_mode_styles_the_charts_in_the_view_itself():
    trace = load("early-rejection-residual.json")
    cursor = steps.cursor_from_params(trace, {"round": "3", "phase": "resolve"})
    normal = [b.content.to_dict() for b in sv.step_view(trace, cursor).blocks if b.kind == sv.CHART]
    lecture = [
        b.content.to_dict()
        for b in sv.step_view(trace, cursor, sv.ViewOptions(lecture=True)).blocks
        if b.kind == sv.CHART
    ]
    assert len(normal) == len(lecture) > 0
    assert all(spec["title"]["fontSize"] == LECTURE_TITLE_SIZE for spec in lecture)
    assert all(spec["title"]["fontSize"] < LECTURE_TITLE_SIZE for spec in normal)


def test_a_recorded_trace_says_whose_times_and_a_live_one_says_warm_up():
    trace = load("early-rejection-residual.json")
    verify = steps.cursor_from_params(trace, {"round": "1", "phase": "verify"})
    recorded = " ".join(str(b.content) for b in sv.step_view(trace, verify).blocks)
    live = " ".join(str(b.content) for b in sv.step_view(trace, verify, sv.ViewOptions(live=True)).blocks)
    assert "recorded on" in recorded and "first-call warm-up" not in recorded
    assert "first-call warm-up" in live


def test_a_head_method_draws_its_feature_flow_in_the_draft_phase():
    trace = load("early-rejection-residual.json")
    eagle = replace(trace, settings=replace(trace.settings, method=methods.EAGLE))
    drafted = " ".join(b.content for b in sv.step_view(eagle, steps.Cursor()).blocks if b.kind == sv.HTML)
    assert 'class="flow-step"' in drafted and 'class="chips"' not in drafted
    plain = " ".join(b.content for b in sv.step_view(trace, steps.Cursor()).blocks if b.kind == sv.HTML)
    assert 'class="chips"' in plain


def test_a_row_of_places_that_cannot_share_a_row_is_refused_clearly():
    blocks = (sv.Block(sv.HTML, "a", sv.LEFT), sv.Block(sv.HTML, "b", sv.TREE))
    with pytest.raises(ValueError, match="cannot hold the places"):
        sv.rows(blocks)
