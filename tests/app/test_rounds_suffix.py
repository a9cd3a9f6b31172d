"""Suffix decoding on the rounds page: a method of the sidebar (the registry feeds it), and its global trie of earlier
outputs is kept per browser session (session_state), so a second run in one session drafts from the first's output
while another session starts with nothing remembered."""

from app_helpers import click, open_page

from specviz import methods
from specviz.ui.render import SUFFIX_MEMORY
from specviz.viz import steps

NEW_RUN = "▶ New run with these settings"


def suffix_session():
    at = open_page("pages/rounds.py")
    assert methods.label(methods.SUFFIX) in at.sidebar.radio(key="method").options
    at.sidebar.radio(key="method").set_value(methods.SUFFIX).run()
    at.sidebar.slider(key="temperature").set_value(0.0).run()  # greedy: both runs print the same text
    return click(at, NEW_RUN)


def test_suffix_runs_remember_this_sessions_outputs_and_no_other_sessions(tiny_default):
    at = suffix_session()
    assert not at.exception and not at.error
    first = at.session_state["rounds_trace"]
    assert first.settings.method == methods.SUFFIX
    at = click(at, NEW_RUN)
    assert not at.exception and not at.error
    second = at.session_state["rounds_trace"]
    assert at.session_state[SUFFIX_MEMORY].cached_requests == 2
    assert second.output_ids == first.output_ids
    assert second.totals.accepted > first.totals.accepted  # it drafted from the first run's output
    other = suffix_session()  # another browser session
    assert other.session_state[SUFFIX_MEMORY].cached_requests == 1
    assert other.session_state["rounds_trace"].totals.accepted == first.totals.accepted


def test_the_draft_phase_shows_which_trie_drafted_the_match_and_each_path_probability(tiny_default):
    import json

    from app_helpers import text

    at = click(suffix_session(), NEW_RUN)  # the second run: the global trie holds the first run's output
    trace = at.session_state["rounds_trace"]
    target = next(r for r in trace.rounds if r.proposed and r.suffix.source == "global")
    while at.session_state["rounds_cursor"] != steps.Cursor(target.index, 0):
        at = click(at, "Next phase")
        assert not at.exception and not at.error
    said = " ".join(text(m) for m in at.markdown)
    assert "Drafted from <b>the global trie of the session's earlier outputs</b>" in said
    assert f"after the matched suffix of {len(target.suffix.match_ids)} token(s)" in said
    specs = [json.loads(chart.proto.spec) for chart in at.get("vega_lite_chart")]
    walks = [s for s in specs if '"path_prob"' in json.dumps(s) and '"min_token_prob"' in json.dumps(s)]
    assert len(walks) == 1  # its bars' values: tests/viz/test_suffix_source.py
    assert [layer["mark"]["type"] for layer in walks[0]["layer"]] == ["bar", "rule"]
