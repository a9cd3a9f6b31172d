"""The workload page with a draft that speaks another tokenizer: its methods are TLI and SLEM (TLI first) beside the
target's own lookups, never the draft-model methods that compare token ids; a measurement with them runs."""

from app_helpers import click, open_page

from specviz import methods


def test_the_workload_page_offers_and_measures_tli_and_slem(model_dirs, monkeypatch):
    monkeypatch.setenv("SPECVIZ_TARGET", str(model_dirs["llama-target"]))
    monkeypatch.setenv("SPECVIZ_DRAFT", str(model_dirs["other-vocab"]))  # another tokenizer
    at = open_page("pages/workload.py", 240)
    at.radio[0].set_value("pasted text").run()
    at.text_area[0].set_value("def add(a, b):\n---\nclass Counter:").run()
    at.sidebar.slider(key="max_new_tokens").set_value(4).run()
    picker = at.multiselect[1] if at.multiselect[0].label.startswith("Sample") else at.multiselect[0]
    labels = set(picker.options)
    assert {methods.label(methods.TLI), methods.label(methods.SLEM)} <= labels
    assert methods.label(methods.DRAFT) not in labels
    assert picker.value == [methods.TLI]
    picker.set_value([methods.TLI, methods.SLEM]).run()
    at.number_input[1].set_value(1).run()  # one timing repeat
    at = click(at, "▶ Measure")
    assert not at.exception and not at.error
    assert {r.method for r in at.session_state["workload_records"]} == {methods.TLI, methods.SLEM}
