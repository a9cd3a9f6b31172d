"""The workload's settings do not depend on the page visited before, and results measured with other settings say
so."""

from __future__ import annotations

from app_helpers import click, open_page, page, text


def test_the_workload_starts_at_its_own_temperature_whichever_page_came_before(tiny_default):
    at = open_page("pages/workload.py")
    first = (at.session_state["temperature"], at.session_state["k"], at.session_state["top_p"])
    at = at.switch_page(page("pages/race.py")).run()
    assert at.session_state["temperature"] == 0.0  # the race starts greedy
    at = at.switch_page(page("pages/workload.py")).run()
    assert not at.exception
    assert (at.session_state["temperature"], at.session_state["k"], at.session_state["top_p"]) == first == (1.0, 4, 1.0)
    assert not at.sidebar.error


def test_a_setting_the_user_chose_is_kept_across_pages(tiny_default):
    at = open_page("pages/workload.py")
    at.sidebar.slider(key="temperature").set_value(0.5).run()
    at = at.switch_page(page("pages/race.py")).run()
    at = at.switch_page(page("pages/workload.py")).run()
    assert at.session_state["temperature"] == 0.5


def test_results_from_other_settings_say_so(tiny_default):
    at = open_page("pages/workload.py")
    at.radio[0].set_value("pasted text").run()
    at.text_area[0].set_value("def add(a, b):").run()
    at.sidebar.slider(key="max_new_tokens").set_value(2).run()
    at = click(at, "▶ Measure")
    assert not at.exception
    assert not any("These results were measured with" in text(i) for i in at.info)
    at.sidebar.slider(key="temperature").set_value(0.0).run()
    notes = [text(i) for i in at.info if "These results were measured with" in text(i)]
    assert notes == [
        "These results were measured with temperature 1 (the sidebar now says 0): press ▶ Measure to measure with "
        "the sidebar's settings."
    ]
