"""The registry feeds the sidebar: early exit is a method of the rounds page with its exit layer E beside it, its
runs draft with the target's own first E layers, and the draft phase names them as the drafter (not a draft model),
the verify phase what of the pass the draft already did."""

from app_helpers import click, open_page, step_phases, text

from specviz import methods


def test_an_early_exit_run_renders_and_names_the_targets_first_layers_as_the_drafter(tiny_default):
    at = open_page("pages/rounds.py")
    assert methods.label(methods.EARLY_EXIT) in at.sidebar.radio(key="method").options
    at.sidebar.radio(key="method").set_value(methods.EARLY_EXIT).run()
    at.sidebar.number_input(key="exit_layer").set_value(2).run()  # the tiny target has L = 3 layers
    at = click(at, "▶ New run with these settings")
    assert not at.exception
    assert not at.error
    assert at.query_params["method"] == methods.EARLY_EXIT and at.query_params["ee"] == "2"
    at, said = step_phases(at)
    drafting = [s for s in said if "propose" in s]
    assert drafting and all("Layers 1..2 of the target propose" in s for s in drafting)
    assert not any("draft model proposes" in s for s in said)
    assert any("runs layers 1..2 on the last draft only" in s for s in said)  # the verify pass's reuse


def test_an_exit_layer_the_target_does_not_have_is_refused_on_the_page(tiny_default):
    at = open_page("pages/rounds.py")
    at.sidebar.radio(key="method").set_value(methods.EARLY_EXIT).run()
    at.sidebar.number_input(key="exit_layer").set_value(3).run()  # E = L: the target itself
    at = click(at, "▶ New run with these settings")
    assert not at.exception
    assert any("from 1 to 2: this target has L = 3 layers" in text(e) for e in at.error)
