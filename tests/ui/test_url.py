"""The round page's URL codec: settings -> URL -> settings gives the same settings, for chain and tree runs."""

import pytest

from specviz.core.sampling import SamplingSettings
from specviz.core.settings import RunSettings
from specviz.core.trace import ExtraToken, Position, Round, Totals, Trace
from specviz.ui import url
from specviz.viz import steps

CHAIN = RunSettings(method="draft", k=3, sampling=SamplingSettings(0.7, 20, 0.9), max_new_tokens=12, seed=5)
NGRAM = RunSettings(method="ngram", k=6, sampling=SamplingSettings(0.0), max_new_tokens=30, seed=0)
TREE = RunSettings(method="tree", k=4, tree=(3, 2, 1, 1), sampling=SamplingSettings(1.0), max_new_tokens=8, seed=9)


@pytest.mark.parametrize("settings", [CHAIN, NGRAM, TREE], ids=["chain", "ngram", "tree"])
def test_settings_to_url_to_settings_is_the_identity(settings):
    opened = url.read_url(url.settings_params(settings, "def add(a, b):\n"))
    assert opened.run_settings(RunSettings()) == settings
    assert opened.prompt == "def add(a, b):\n"


def test_a_tree_url_carries_its_shape_and_a_chain_url_none():
    assert url.settings_params(TREE, "x")["tree"] == "3,2,1,1"
    assert "tree" not in url.settings_params(CHAIN, "x")


def test_what_the_url_does_not_carry_comes_from_the_base():
    base = RunSettings(draft_vocab=1024, ngram_max=4)
    back = url.read_url(url.settings_params(CHAIN, "x")).run_settings(base)
    assert back.ngram_max == 4  # not in the URL: the sidebar's own value stays
    assert back.draft_vocab == CHAIN.draft_vocab  # the draft vocabulary changes the run: the URL carries it


def test_a_run_with_the_whole_draft_vocabulary_has_its_own_url():
    """A past bug: a run with draft vocabulary 0 had the same URL as the default (1024) run."""
    whole, trimmed = RunSettings(draft_vocab=0), RunSettings(draft_vocab=1024)
    assert url.settings_params(whole, "x") != url.settings_params(trimmed, "x")
    for settings in (whole, trimmed):
        assert url.read_url(url.settings_params(settings, "x")).run_settings(RunSettings(draft_vocab=7)) == settings


def test_a_link_made_on_another_pair_says_so():
    opened = url.read_url({"pair": "assets/models/pystdlib/target", "dtype": "bfloat16"})
    from specviz.engine.loading.models import BUNDLED_DRAFT, BUNDLED_TARGET

    assert url.pair_note(opened, (BUNDLED_TARGET, BUNDLED_DRAFT, "auto", "bfloat16")) == []
    assert url.pair_note(opened, (BUNDLED_TARGET, BUNDLED_DRAFT, "auto", "auto")) == []
    [note] = url.pair_note(opened, (BUNDLED_TARGET, BUNDLED_DRAFT, "auto", "float32"))
    assert "bfloat16" in note
    [note] = url.pair_note(opened, ("/elsewhere/target", "/elsewhere/draft", "auto", "bfloat16"))
    assert "'assets/models/pystdlib/target'" in note


def test_unreadable_numbers_are_dropped_and_the_rest_kept():
    opened = url.read_url({"k": "two", "t": "0.5", "seed": "", "lecture": "yes", "view": "wide"})
    assert opened.sidebar == {"temperature": 0.5}  # k and seed do not parse: the sidebar keeps its own
    assert not opened.lecture  # only "1"/"true" and "focus"/"full" mean something
    assert opened.focus is None


def hand_trace(settings: RunSettings) -> Trace:
    """Two chain rounds: the first rejects its second draft, the second accepts both and takes the bonus."""
    pos = lambda i, verdict: Position(i, 1, "x", 0.5, 0.5, 1.0, 0.1, verdict == "accepted", verdict)  # noqa: E731
    rounds = (
        Round(0, (pos(0, "accepted"), pos(1, "rejected")), ExtraToken(2, "y", "correction", 1, 1, 0.5), (), (1, 2),
              1.0, 1.0, (0, 0), (0, 0)),
        Round(1, (pos(0, "accepted"), pos(1, "accepted")), ExtraToken(2, "y", "bonus", 1, 1, 0.5), (), (1, 1, 2),
              1.0, 1.0, (0, 0), (0, 0)),
    )  # fmt: skip
    return Trace(settings, "prompt", (1,), rounds, "", Totals.of(rounds, 1.0))


def test_the_page_address_names_the_moment_the_view_and_the_source():
    trace = hand_trace(RunSettings(method="draft", k=2))
    cursor = steps.next_event(trace, steps.Cursor(), "rejection")  # round 1, judging its second draft
    live = url.page_params(trace, cursor, "live", focus=True, lecture=True)
    opened = url.read_url(live)
    assert opened.moment == {"round": "1", "phase": "judge", "pos": "2"}
    assert steps.cursor_from_params(trace, opened.moment) == cursor
    assert opened.focus is True
    assert opened.lecture is True
    assert opened.run_settings(RunSettings()) == trace.settings
    bundled = url.page_params(trace, cursor, url.BUNDLED + "low-q-accepted", focus=False, lecture=False)
    assert bundled["trace"] == "low-q-accepted"
    assert "method" not in bundled
    assert "lecture" not in bundled
    assert url.read_url(bundled).focus is False
    uploaded = url.page_params(trace, cursor, "upload", focus=False, lecture=False)
    assert set(uploaded) == {"round", "phase", "pos", "view"}  # an uploaded trace has no name to link to


def test_a_presenters_link_reads_as_lecture_mode_in_the_focus_view_and_copies_percent_encoded():
    opened = url.read_url({"trace": "low-q-accepted", "view": "full", "present": "1"})
    assert (opened.present, opened.lecture, opened.focus) == (True, True, True)  # present=1 wins over view=full
    plain = url.read_url({"trace": "low-q-accepted", "view": "full"})
    assert (plain.present, plain.lecture, plain.focus) == (False, False, False)
    params = {"round": "2", "phase": "judge", "pos": "1", "prompt": "def f(x):\n  return"}
    assert url.presenter_params(params) == {**params, "present": "1"}
    assert url.query_string(params) == "round=2&phase=judge&pos=1&prompt=def%20f%28x%29%3A%0A%20%20return"
    html = url.copy_link_html(params)
    assert html.count('<button type="button" class="copy-link"') == 2
    assert 'data-query="round=2&amp;phase=judge&amp;pos=1&amp;prompt=def%20f%28x%29%3A%0A%20%20return"' in html
    assert "present=1" in html


def test_a_link_names_a_catalogue_pair_by_its_name():
    from specviz.engine.loading.catalogue import SMOLLM2
    from specviz.engine.loading.models import BUNDLED_DRAFT, BUNDLED_TARGET

    assert url.pair_name(BUNDLED_TARGET) == url.pair_name("assets/models/pystdlib/target") == "pystdlib"
    assert url.pair_name(SMOLLM2.target_source) == "smollm2"
    assert url.pair_name("/elsewhere/target") == "/elsewhere/target"
    opened = url.read_url({"pair": "smollm2"})
    assert url.pair_note(opened, (SMOLLM2.target_source, "", "auto", "auto")) == []
    [note] = url.pair_note(opened, (BUNDLED_TARGET, BUNDLED_DRAFT, "auto", "auto"))
    assert "'smollm2'" in note and "load that pair in the sidebar" in note


def test_a_link_naming_a_pair_that_does_not_exist_says_so_and_names_the_pairs():
    from specviz.engine.loading.catalogue import PAIR_NAMES
    from specviz.engine.loading.models import BUNDLED_DRAFT, BUNDLED_TARGET

    [note] = url.pair_note(url.read_url({"pair": "nosuchpair"}), (BUNDLED_TARGET, BUNDLED_DRAFT, "auto", "auto"))
    assert "'nosuchpair'" in note and "there is no pair of that name" in note
    assert ", ".join(PAIR_NAMES) in note and "The sidebar keeps its pair, 'pystdlib'." in note
    assert "load that pair in the sidebar" not in note  # there is none to load
    [note] = url.pair_note(url.read_url({"pair": "/elsewhere/target"}), (BUNDLED_TARGET, BUNDLED_DRAFT, "auto", "auto"))
    assert "load that pair in the sidebar" in note  # a path: a Custom pair the sidebar can load
