"""The quantized self-draft on the rounds page: a method of the sidebar with its bits beside it, its runs draft
with the target's own low-bit copy, and the draft phase names the copy (not a draft model) and says how close q is
to p at those bits; the link carries the bits."""

from app_helpers import click, open_page, step_phases

from specviz import methods


def test_a_quantized_run_names_the_targets_own_copy_and_its_bits(tiny_default):
    at = open_page("pages/rounds.py")
    assert methods.label(methods.QUANTIZED) in at.sidebar.radio(key="method").options
    at.sidebar.radio(key="method").set_value(methods.QUANTIZED).run()
    at.sidebar.selectbox(key="quant_bits").set_value(2).run()
    at = click(at, "▶ New run with these settings")
    assert not at.exception and not at.error
    assert at.query_params["method"] == methods.QUANTIZED and at.query_params["qb"] == "2"
    at, said = step_phases(at)
    drafting = [s for s in said if "propose" in s]
    assert drafting and all("The target's own 2-bit copy proposes" in s for s in drafting)
    assert all("q drifts far from p" in s for s in drafting)
    assert not any("draft model proposes" in s for s in said)


def test_the_bits_are_shown_only_for_the_quantized_method_on_the_rounds_page(tiny_default):
    at = open_page("pages/rounds.py")
    assert not [w for w in at.sidebar.selectbox if w.key == "quant_bits"]
    at.sidebar.radio(key="method").set_value(methods.QUANTIZED).run()
    assert at.sidebar.selectbox(key="quant_bits").value == 4  # what measured best
