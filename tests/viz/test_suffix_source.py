"""Where a suffix round's draft came from, in the round's drafting phase: the trie (this request's, or the session's
earlier outputs'), the matched suffix's tokens, and each draft's path probability against min_token_prob; one step
view, so the page (server stepping) and the in-browser player's bundle show the same."""

import pytest

from specviz.core.settings import RunSettings
from specviz.core.suffix_tree import SuffixMemory
from specviz.engine.decode import generate
from specviz.viz import player_bundle as pb
from specviz.viz import step_view as sv
from specviz.viz import steps
from specviz.viz.explain import suffix_source_html
from specviz.viz.round_charts import suffix_prob_chart, suffix_prob_frame
from specviz.viz.text import literal, visible

PROMPT = "The quick brown fox"
SUFFIX = RunSettings(method="suffix", k=6, max_new_tokens=24, seed=0)


@pytest.fixture(scope="module")
def runs(load):
    """A first run (only its own trie can draft) and a second over the same memory (the first's output drafts)."""
    pair = load("llama-target")
    memory = SuffixMemory()
    return generate(pair, PROMPT, SUFFIX, memory=memory), generate(pair, PROMPT, SUFFIX, memory=memory)


def bar_values(spec: dict) -> list[dict]:
    """The rows of a suffix chart's bar layer (its rule has a dataset of its own)."""
    return spec["datasets"][spec["layer"][0]["data"]["name"]]


def draft_blocks(trace, round_index: int) -> list[sv.Block]:
    view = sv.step_view(trace, steps.Cursor(round_index, 0))
    return [b for b in view.blocks if b.section == sv.PANEL]


def test_the_draft_phase_names_the_earlier_outputs_trie_and_the_matched_tokens(runs):
    _, second = runs
    r = next(r for r in second.rounds if r.proposed and r.suffix.source == "global")
    blocks = draft_blocks(second, r.index)
    html = "".join(b.content for b in blocks if b.kind == sv.HTML)
    assert "global trie of the session" in html and "earlier outputs" in html
    assert f"matched suffix of {len(r.suffix.match_ids)} token(s)" in html
    for text in r.suffix.match_text[-12:]:
        assert literal(visible(text)) in html
    chart = next(b.content for b in blocks if b.kind == sv.CHART).to_dict()
    assert [layer["mark"]["type"] for layer in chart["layer"]] == ["bar", "rule"]
    values = bar_values(chart)
    assert [v["path_prob"] for v in values] == pytest.approx(list(r.suffix.probs))
    assert all(v["min_token_prob"] == 0.1 for v in values)


def test_a_first_runs_rounds_draft_from_this_requests_trie(runs):
    first, _ = runs
    r = next(r for r in first.rounds if r.proposed)
    assert r.suffix.source == "request"
    assert "this request" in suffix_source_html(r) and "prompt + output so far" in suffix_source_html(r)


def test_a_round_with_nothing_likely_enough_shows_its_longest_match_and_no_chart(runs):
    first, _ = runs
    r = next(r for r in first.rounds if not r.proposed and r.suffix.match_ids)
    assert "no continuation of it was likely enough" in suffix_source_html(r)
    assert suffix_prob_chart(r, 0.1) is None
    assert not [b for b in draft_blocks(first, r.index) if b.kind == sv.CHART]


def test_each_bar_is_a_draft_with_its_verdict_and_the_line_is_min_token_prob(runs):
    first, _ = runs
    r = next(r for r in first.rounds if r.proposed)
    frame = suffix_prob_frame(r, 0.25)
    assert list(frame["path_prob"]) == pytest.approx(list(r.suffix.probs))
    assert list(frame["verdict"]) == [pos.verdict for pos in r.positions]
    assert set(frame["min_token_prob"]) == {0.25}


def test_a_round_without_a_record_shows_nothing_new():
    from specviz.core.trace import Round

    bare = Round(0, (), None, (), (), 0.0, 0.0, (0, 0), (0, 0))
    assert suffix_source_html(bare) == "" and suffix_prob_chart(bare, 0.1) is None


@pytest.mark.slow  # a bundle builds every step in every view named
def test_the_players_bundle_carries_the_same_source_and_chart(runs):
    from specviz.viz.player_wire import rounded

    _, second = runs
    r = next(r for r in second.rounds if r.proposed and r.suffix.source == "global")
    bundle = pb.load_bundle(pb.bundle_json(pb.player_bundle(second, views=("full",))))
    i = pb.step_index(second, steps.Cursor(r.index, 0))
    shown = bundle.blocks(i, "full")
    assert suffix_source_html(r) in [content for kind, _, content in shown if kind == sv.HTML]
    charts = [content for kind, _, content in shown if kind == sv.CHART]
    suffix_charts = [c for c in charts if "layer" in c and c["layer"][0]["mark"]["type"] == "bar"]
    sent = [rounded(p) for p in r.suffix.probs]  # the bundle sends what the chart shows (4 significant digits)
    assert [[v["path_prob"] for v in bar_values(c)] for c in suffix_charts] == [sent]
