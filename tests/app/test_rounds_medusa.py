"""The registry feeds the sidebar: Medusa heads are a method of the rounds page, its run drafts from the heads beside
the target, its rounds step through every phase like any chain's, and the drafting phase says where the drafts came
from (one feature, independent heads), not "the draft model"."""

from app_helpers import click, open_page, step_phases

from specviz import methods


def test_the_medusa_method_runs_on_the_rounds_page_and_steps_through_its_phases(tiny_default):
    at = open_page("pages/rounds.py")
    assert methods.label(methods.MEDUSA) in at.sidebar.radio(key="method").options
    at.sidebar.radio(key="method").set_value(methods.MEDUSA).run()
    at = click(at, "▶ New run with these settings")
    assert not at.exception
    assert not at.error
    assert at.query_params["method"] == methods.MEDUSA
    at, said = step_phases(at)
    drafting = [s for s in said if "propose" in s]
    assert drafting and all("Medusa heads propose" in s for s in drafting)
    assert "all at once from one feature" in drafting[0] and "without seeing the other heads' guesses" in drafting[0]
