"""The race with a draft that speaks another tokenizer: TLI, SLEM and Hugging Face's universal assisted generation
are its lanes (the lanes that compare token ids across tokenizers are not offered), and greedy, each gives plain
decoding's text."""

from app_helpers import click, open_page

from specviz.methods import DRAFT, HF_ASSISTED, HF_UAG, PLAIN, SLEM, TLI, lane_label


def test_the_race_offers_and_runs_the_lanes_across_tokenizers(model_dirs, monkeypatch):
    monkeypatch.setenv("SPECVIZ_TARGET", str(model_dirs["llama-target"]))
    monkeypatch.setenv("SPECVIZ_DRAFT", str(model_dirs["other-vocab"]))  # another tokenizer
    at = open_page("pages/race.py")
    at.sidebar.slider(key="temperature").set_value(0.0).run()
    at.sidebar.slider(key="max_new_tokens").set_value(8).run()
    at.radio(key="race_picking").set_value("up to three of my choice, beside plain").run()
    picker = at.multiselect(key="race_three")
    offered = set(picker.options)  # the lanes' labels
    assert {lane_label(m) for m in (TLI, SLEM, HF_UAG)} <= offered
    assert not {lane_label(m) for m in (DRAFT, HF_ASSISTED)} & offered
    picker.set_value([TLI, SLEM, HF_UAG]).run()
    at = click(at, "Start the race")
    assert not at.exception and not at.error
    records = at.session_state["race"][0].records
    assert [r.method for r in records] == [PLAIN, TLI, SLEM, HF_UAG]
    assert all(r.output_ids == records[0].output_ids for r in records)  # greedy, float32: the same text
