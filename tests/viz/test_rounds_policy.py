"""The round page's decisions (viz/rounds_policy.py, viz.explain.setting_captions): which bundled trace a source names,
what a shared link does to the run shown, which address keys the player keeps, and the captions a run's settings get."""

import json
from pathlib import Path

from specviz.viz import rounds_policy as policy
from specviz.viz.explain import DYNAMIC_NOTE, setting_captions

PREFIX = "bundled:"
TRACES = {"greedy-intro": {"title": "Greedy", "what": "A greedy run."}}
LESSON = {"tree": "TREE.", "greedy": "GREEDY.", "sampling": "SAMPLING at {temperature:g}."}


def test_a_bundled_source_names_its_trace_and_others_name_none():
    assert policy.bundled_name("bundled:greedy-intro", PREFIX) == "greedy-intro"
    assert policy.bundled_name("live", PREFIX) is None
    assert policy.bundled_name("upload", PREFIX) is None


def test_bundled_info_is_the_traces_entry_or_empty():
    assert policy.bundled_info("bundled:greedy-intro", TRACES, PREFIX) == TRACES["greedy-intro"]
    assert policy.bundled_info("bundled:gone", TRACES, PREFIX) == {}  # a name no longer bundled
    assert policy.bundled_info("live", TRACES, PREFIX) == {}


def test_a_link_opens_its_bundled_trace_asks_for_a_live_run_or_keeps_the_run_shown():
    assert policy.link_action("greedy-intro", TRACES, "live", PREFIX) == policy.OPEN_BUNDLED
    assert policy.link_action("greedy-intro", TRACES, "bundled:other", PREFIX) == policy.OPEN_BUNDLED
    assert policy.link_action(None, TRACES, "bundled:greedy-intro", PREFIX) == policy.ASK_LIVE  # settings: live
    assert policy.link_action("unknown", TRACES, "bundled:greedy-intro", PREFIX) == policy.ASK_LIVE
    assert policy.link_action(None, TRACES, "live", PREFIX) == policy.KEEP
    assert policy.link_action(None, TRACES, "upload", PREFIX) == policy.KEEP


def test_a_link_to_a_bundled_trace_that_is_not_there_says_what_is_shown_instead():
    assert policy.unknown_trace_note("greedy-intro", TRACES, "live", PREFIX) == ""
    assert policy.unknown_trace_note(None, TRACES, "live", PREFIX) == ""
    said = policy.unknown_trace_note("nosuchtrace", TRACES, "bundled:greedy-intro", PREFIX)
    assert said.startswith("The link asks for the bundled trace 'nosuchtrace', which this app does not have")
    assert ", ".join(TRACES) in said and said.endswith("showing the live run of the sidebar's settings instead.")
    assert policy.link_action("nosuchtrace", TRACES, "upload", PREFIX) == policy.KEEP  # so the note says the upload
    assert "showing the uploaded trace already shown" in policy.unknown_trace_note("x", TRACES, "upload", PREFIX)


def test_the_player_keeps_every_key_but_the_moment_and_the_view():
    params = {"round": "2", "phase": "verify", "pos": "1", "view": "focus", "lecture": "1", "k": "4", "trace": "t"}
    assert policy.player_params(params, ("round", "phase", "pos")) == {"k": "4", "trace": "t"}
    assert policy.player_params({}, ("round",)) == {}


def test_a_greedy_chain_run_gets_the_greedy_caption_alone():
    assert setting_captions(False, False, 0.0, None, LESSON) == ["GREEDY."]


def test_a_sampled_tree_run_gets_the_tree_the_first_run_note_and_the_temperature_in_order():
    assert setting_captions(True, False, 0.7, "FIRST.", LESSON) == ["TREE.", "FIRST.", "SAMPLING at 0.7."]


def test_a_dynamic_tree_adds_its_growth_note_to_the_tree_caption():
    captions = setting_captions(False, True, 0.0, None, LESSON)
    assert captions == ["TREE." + DYNAMIC_NOTE, "GREEDY."]


def test_the_bundled_lesson_fills_the_temperature_into_the_sampling_caption():
    lesson = json.loads((Path(__file__).resolve().parents[2] / "assets" / "lessons" / "rounds.json").read_text())
    sampled = setting_captions(False, False, 0.25, None, lesson)
    assert sampled[0].startswith("Sampling at temperature 0.25: a draft is kept with probability min(1, p/q)")
