"""The race page runs every lane with short outputs; under greedy decoding all texts are identical."""

from app_helpers import click, open_page


def test_race_with_short_outputs(tiny_default):
    at = open_page("pages/race.py")
    at.sidebar.slider(key="temperature").set_value(0.0).run()
    at.sidebar.slider(key="max_new_tokens").set_value(10).run()
    at = click(at, "Start the race")
    assert not at.exception and not at.error
    results, greedy, _ = at.session_state["race"]
    assert greedy and [r.method for r in results] == ["plain", "draft", "ngram", "hf_assisted", "hf_prompt_lookup"]
    table = at.dataframe[0].value
    assert list(table["same text as plain"]) == ["✓"] * 5
    assert list(table["tokens"]) == [10] * 5


def test_k_sweep_shows_measured_and_predicted(tiny_default):
    at = open_page("pages/race.py")
    at.sidebar.slider(key="max_new_tokens").set_value(8).run()
    at = click(at, "Run the K sweep")
    assert not at.exception and not at.error
    rows = at.session_state["sweep"]
    assert [(r["k"], r["kind"]) for r in rows][:2] == [(1, "measured"), (1, "predicted from measured τ and costs")]
    assert all(r["speedup"] > 0 for r in rows)
