"""What the round page says about the run it shows: differences from the sidebar, a recording's settings and
machine, round 1's warm-up, and probabilities that never print as 0.000 when they are not 0."""

import html

from specviz import methods
from specviz.core.sampling import SamplingSettings
from specviz.core.settings import RunSettings
from specviz.viz import run_notes
from specviz.viz.text import prob

CHAIN = RunSettings(method=methods.DRAFT, k=4, sampling=SamplingSettings(1.0), max_new_tokens=32)
TREE = RunSettings(method=methods.TREE, k=2, tree=(2, 1), sampling=SamplingSettings(1.0), max_new_tokens=32)
NGRAM = RunSettings(method=methods.NGRAM, k=6, sampling=SamplingSettings(0.0), max_new_tokens=32)


def test_the_same_settings_give_no_cue_and_each_change_is_named_with_both_values():
    assert run_notes.stale_run_note(CHAIN, CHAIN) == ""
    assert run_notes.stale_run_note(CHAIN, None) == ""  # a sidebar with a bad value holds no settings
    assert run_notes.settings_differences(
        CHAIN, RunSettings(k=3, sampling=SamplingSettings(1.0), max_new_tokens=32)
    ) == ["K 4 (the sidebar: 3)"]
    assert run_notes.settings_differences(CHAIN, TREE) == [
        f"method {methods.label(methods.DRAFT)} (the sidebar: {methods.label(methods.TREE)})",
        "tree shape none (a chain) (the sidebar: 2,1)",
        "K 4 (the sidebar: 2)",
    ]
    changed = run_notes.settings_differences(CHAIN, NGRAM)
    assert "temperature 1 (the sidebar: 0)" in changed
    assert "draft vocabulary all (the sidebar: all)" not in changed  # equal values are not listed
    note = run_notes.stale_run_note(CHAIN, NGRAM, ["a prompt other than the one in the prompt box now"])
    assert note.startswith("The run shown used method ")
    assert note.endswith(f"Press **{run_notes.NEW_RUN}** to run the sidebar's settings and prompt.")
    assert "a prompt other than the one in the prompt box now" in note


def test_a_pair_or_prompt_changed_since_the_run_is_named():
    meta = {"target": "t1", "draft": "d1"}
    assert run_notes.source_differences(meta, "x", ("t1", "d1", "x")) == []
    assert run_notes.source_differences(meta, "x", ("t1", "d1", "y")) == [
        "a prompt other than the one in the prompt box now"
    ]
    said = run_notes.source_differences(meta, "x", ("t2", "d1", "x"))
    assert [html.unescape(line) for line in said] == ["the pair t1 ← d1 (the sidebar: t2 ← d1)"]


def test_a_pair_switch_that_changed_the_prompt_box_is_not_called_an_edit():
    """Switching the pair puts that pair's preset (or its chat template) in the prompt box: nobody edited it."""
    meta = {"target": "pystdlib", "draft": "pystdlib-draft"}
    said = run_notes.source_differences(meta, "def read_lines(path):", ("smollm2", "smollm2-draft", "<|im_start|>"))
    said = [html.unescape(line) for line in said]  # the pairs' names are drawn as text (viz.text.literal)
    assert said == [
        "the pair pystdlib ← pystdlib-draft and the prompt it was given (the sidebar: smollm2 ← smollm2-draft, and "
        "another prompt)"
    ]
    assert not any("edited" in line for line in said)


def test_a_recording_names_its_settings_and_machine():
    assert run_notes.machine_name({}) == "another machine"
    assert run_notes.machine_name({"device": "cpu", "dtype": "float32"}) == "another machine (cpu, float32)"
    assert run_notes.machine_name({"machine": "an H100 box", "device": "cuda"}) == "an H100 box (cuda)"
    note = run_notes.recorded_note(TREE, {"device": "cpu"}, bundled=True)
    assert note.startswith(f"This bundled trace was recorded with {methods.label(methods.TREE)}, tree 2,1, T = 1, ")
    assert "another machine (cpu)" in html.unescape(note)
    assert run_notes.recorded_note(CHAIN, {}, bundled=False).startswith("This uploaded trace")


def test_a_recordings_machine_from_its_meta_is_shown_as_text_never_as_markdown():
    """An uploaded trace's meta is anyone's text: an image there would make every viewer's browser fetch it (their
    address leaks), a link would sit in the page's own words. Each sentence drawn as Markdown holds it inert."""
    import html

    image = "![m](http://attacker.example/m.png) [click](http://attacker.example)"
    meta = {"machine": image, "device": "cpu"}
    note = run_notes.recorded_note(CHAIN, meta, bundled=False)
    for markup in ("![", "](", "[click]"):
        assert markup not in note, note
    assert image in html.unescape(note)  # the reader sees exactly the characters the trace holds
    said = run_notes.source_differences({"target": image, "draft": "d"}, "x", ("t", "d", "x"))
    assert "![" not in said[0] and image in html.unescape(said[0])
    from dataclasses import replace
    from pathlib import Path

    from specviz.core.trace_json import trace_from_json
    from specviz.viz import step_view, steps

    recorded = (Path(__file__).parents[2] / "assets" / "traces" / "full-accept-bonus.json").read_text()
    trace = replace(trace_from_json(recorded), meta=meta)
    captions = [
        b.content
        for cursor in steps.moments(trace)
        for b in step_view.step_view(trace, cursor).blocks
        if b.kind == step_view.CAPTION and "recorded on" in b.content
    ]
    assert captions and all("![" not in c and "](" not in c for c in captions)


def test_only_round_one_of_a_live_run_carries_the_warm_up_note():
    assert run_notes.verify_time_note(0, live=True) == run_notes.FIRST_ROUND_NOTE
    assert run_notes.verify_time_note(1, live=True) == ""
    assert run_notes.verify_time_note(0, live=False) == ""


def test_small_probabilities_keep_their_digits():
    assert prob(3.2e-05) == "3.2e-05"
    assert prob(0.0004) == "4.0e-04"
    assert prob(0.146) == "0.146"
    assert prob(0.0) == "0"  # an exact zero (a token top-k or top-p removed from p) is said as one
