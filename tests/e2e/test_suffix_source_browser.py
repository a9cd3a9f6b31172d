"""In a real browser, offline: an exported suffix run's drafting phase shows where the draft came from (the trie of the
session's earlier outputs), the matched suffix and the path-probability chart, drawn by the in-browser player from
the same step view the server path draws."""

import pytest

from specviz.core.settings import RunSettings
from specviz.core.suffix_tree import SuffixMemory
from specviz.engine.decode import generate
from specviz.viz.export_html import trace_html_file

SUFFIX = RunSettings(method="suffix", k=6, max_new_tokens=24, seed=0)


@pytest.fixture(scope="module")
def exported(load, tmp_path_factory):
    """A second suffix run over one memory (its drafts come from the first's output) as an offline HTML file."""
    pair, memory = load("llama-target"), SuffixMemory()
    generate(pair, "The quick brown fox", SUFFIX, memory=memory)
    trace = generate(pair, "The quick brown fox", SUFFIX, memory=memory)
    path = tmp_path_factory.mktemp("export") / "suffix.html"
    path.write_text(trace_html_file(trace), encoding="utf-8")
    return path, next(r for r in trace.rounds if r.proposed and r.suffix.source == "global")


def test_the_player_shows_the_trie_the_match_and_the_path_probabilities(exported, browser):
    path, r = exported
    tab = browser.new_page(viewport={"width": 1280, "height": 900})
    tab.goto(f"{path.as_uri()}#round={r.index + 1}&phase=draft")
    tab.wait_for_selector("body[data-ready='1']", timeout=60_000)
    assert tab.inner_text(".spz-where").startswith(f"Round {r.index + 1} of ")
    shown = tab.inner_text(".spz-stage")
    assert "Drafted from the global trie of the session's earlier outputs" in shown
    assert f"after the matched suffix of {len(r.suffix.match_ids)} token(s)" in shown
    tab.locator(".spz-stage svg").first.wait_for(timeout=30_000)  # the path-probability chart is drawn
    assert "min_token_prob" in tab.inner_text(".spz-stage")  # its title, in the drawn chart
    tab.close()
