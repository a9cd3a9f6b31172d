"""The workload page with input no run can take (every prompt longer than the context): a clear message, and the
results already on screen are kept."""

from __future__ import annotations

import html

from app_helpers import click, open_page

LONG = "def f():\n    return 1\n" * 400  # far past the test models' context


def test_a_workload_no_prompt_of_which_fits_is_refused_and_earlier_results_stay(tiny_default):
    at = open_page("pages/workload.py")
    at.radio[0].set_value("pasted text").run()
    at.sidebar.slider(key="max_new_tokens").set_value(2).run()
    at.text_area[0].set_value("def add(a, b):").run()
    at = click(at, "▶ Measure")
    assert not at.exception
    before = list(at.session_state["workload_records"])
    assert before
    at.text_area[0].set_value(LONG).run()
    at = click(at, "▶ Measure")
    assert not at.exception
    assert any("longer than the model's context" in html.unescape(e.value) for e in at.error)
    assert list(at.session_state["workload_records"]) == before
