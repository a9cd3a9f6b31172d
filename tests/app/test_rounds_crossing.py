"""A draft with a tokenizer of its own on the rounds page: the sidebar offers TLI and SLEM instead of the draft-model
methods, and the draft phase shows the translation (the draft's tokens, their text, the target's tokens)."""

from app_helpers import click, open_page, text

from specviz import methods

NEW_RUN = "▶ New run with these settings"


def test_the_sidebar_offers_tli_and_slem_and_the_draft_phase_shows_the_translation(model_dirs, monkeypatch):
    monkeypatch.setenv("SPECVIZ_TARGET", str(model_dirs["llama-target"]))
    monkeypatch.setenv("SPECVIZ_DRAFT", str(model_dirs["other-vocab"]))  # another tokenizer
    at = open_page("pages/rounds.py")
    options = at.sidebar.radio(key="method").options
    assert methods.label(methods.TLI) in options and methods.label(methods.SLEM) in options
    assert methods.label(methods.DRAFT) not in options  # it cannot compare tokens with this draft
    at.sidebar.radio(key="method").set_value(methods.TLI).run()
    at.sidebar.slider(key="temperature").set_value(0.0).run()
    at = click(at, NEW_RUN)
    assert not at.exception and not at.error
    trace = at.session_state["rounds_trace"]
    assert trace.settings.method == methods.TLI and all(r.crossing for r in trace.rounds)
    said = " ".join(text(m) for m in at.markdown)
    assert "TLI: the draft speaks its own tokenizer" in said
    assert "their text:" in said and "of q masked" in said
