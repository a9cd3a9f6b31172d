"""The home and round pages open on the first run (ui.controls.FIRST_RUN with the code preset) and say what it is;
the measuring pages keep their own defaults whichever page came before."""

from __future__ import annotations

from app_helpers import open_page, page

from specviz.engine.loading.catalogue import presets_for
from specviz.ui.controls import FIRST_RUN, FIRST_RUN_NOTE, first_run_note, first_run_settings, is_first_run


def test_the_round_page_opens_on_the_first_run_and_says_what_it_is(tiny_default):
    at = open_page("pages/rounds.py")
    assert not at.exception
    assert {key: at.session_state[key] for key in FIRST_RUN} == FIRST_RUN  # the sidebar shows the first run's settings
    assert at.session_state["prompt"] == presets_for(tiny_default[0])["code"]
    shown = at.session_state["rounds_trace"]
    assert shown.settings == first_run_settings()  # the tiny draft recommends no vocabulary (0)
    assert shown.prompt == presets_for(tiny_default[0])["code"]
    captions = [c.value for c in at.caption]
    note = first_run_note(*tiny_default)  # not the toy's words: this pair is not the toy
    assert note in captions  # under the trace picker, about the run shown
    assert any(note in c.value for c in at.sidebar.caption)
    assert not any(FIRST_RUN_NOTE in c for c in captions + [c.value for c in at.sidebar.caption])


def test_a_changed_run_is_no_longer_called_the_first_run(tiny_default):
    at = open_page("pages/rounds.py")
    at.sidebar.number_input(key="seed").set_value(4).run()
    at = next(b for b in at.button if b.label.startswith("▶ New run")).click().run()
    assert not at.exception
    assert at.session_state["rounds_trace"].settings.seed == 4
    assert first_run_note(*tiny_default) not in [c.value for c in at.caption]
    assert not is_first_run(at.session_state["rounds_trace"].settings, presets_for(tiny_default[0])["code"], "")


def test_the_home_page_runs_the_first_run_and_says_what_it_is(tiny_default):
    at = open_page("pages/home.py")
    assert not at.exception
    assert first_run_note(*tiny_default) in [c.value for c in at.caption]
    (summary,) = [m.value for m in at.markdown if m.value.startswith("Just now the target answered this prompt twice")]
    assert summary.count(". ") == 1  # two sentences a student can read; the protocol's details wait in the expander
    (how,) = [e for e in at.expander if e.label == "How this was measured"]
    assert any("This server keeps the result for every visitor" in c.value for c in how.caption)


def test_the_workload_and_race_keep_their_seed_after_the_round_page(tiny_default):
    at = open_page("pages/rounds.py")
    assert at.session_state["seed"] == FIRST_RUN["seed"] != 0
    at = at.switch_page(page("pages/workload.py")).run()
    assert (at.session_state["seed"], at.session_state["temperature"]) == (0, 1.0)  # they measure: as before
    at = at.switch_page(page("pages/race.py")).run()
    assert (at.session_state["seed"], at.session_state["temperature"]) == (0, 0.0)
