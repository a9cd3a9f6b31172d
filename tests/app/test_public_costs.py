"""Public mode bounds what a run or a replay costs before it is queued: an upload under the size cap that holds more
drafts, tree nodes or rounds than a run here may make is refused with what it holds and what is allowed, and a prompt
over the prompt-token cap (counted as the model reads it) is refused by the round page, the race, the K sweep and the
workload page; the visitor's run shown is kept."""

from __future__ import annotations

import html
import json

import pytest
from app_helpers import click, open_page
from hostile_traces import chain_doc, tree_doc

from specviz.ui.limits import Limits
from specviz.viz.run_notes import NEW_RUN


@pytest.mark.parametrize(
    "doc, said",
    [
        (chain_doc(k=4, positions=1300), "1300 drafted positions; its settings allow at most 4 drafts a round"),
        (tree_doc((2, 2), widths=(1200,)), "1200 tree nodes; its settings allow at most 6 tree nodes a round"),
        (chain_doc(k=12, positions=12), "this deployment replays at most 8 drafts a round"),
        (chain_doc(k=4, rounds=80, max_new_tokens=200), "this deployment replays at most 64 new tokens"),
    ],
    ids=["chain-past-its-k", "tree-past-its-nodes", "k-past-the-cap", "rounds-past-the-cap"],
)
def test_an_upload_past_a_bound_is_refused_before_its_bundle_is_built(tiny_default, monkeypatch, doc, said):
    monkeypatch.setenv("SPECVIZ_PUBLIC", "1")
    at = open_page("pages/rounds.py")
    before = at.session_state["rounds_trace"]
    upload = json.dumps(doc, separators=(",", ":")).encode()
    assert len(upload) < 200_000  # under the upload cap: only the bound refuses it
    at.file_uploader(key="trace_upload").set_value(("big.json", upload, "application/json")).run()
    assert not at.exception
    assert any(said in html.unescape(e.value) for e in at.error), [e.value for e in at.error]
    assert at.session_state["rounds_trace"] is before  # what the visitor had is kept


LONG = "def f(x):\n    return x + 1\n" * 8  # far more tokens than the cap below


def prompt_refusal(at) -> str:
    shown = " ".join(html.unescape(e.value) for e in at.error)
    assert "this deployment runs prompts of at most 60 tokens" in shown, shown
    return shown


def test_a_prompt_over_the_token_cap_is_refused_before_the_round_page_queues_it(tiny_default, monkeypatch):
    monkeypatch.setenv("SPECVIZ_PUBLIC", "1")
    monkeypatch.setenv("SPECVIZ_MAX_PROMPT_TOKENS", "60")
    at = open_page("pages/rounds.py")
    before = at.session_state["rounds_trace"]
    at.text_area(key="prompt").set_value(LONG).run()
    at = click(at, NEW_RUN)
    assert not at.exception
    assert "The prompt is " in prompt_refusal(at)  # its own count named beside the cap
    assert at.session_state["rounds_trace"] is before


def test_the_race_and_the_k_sweep_refuse_a_prompt_over_the_cap(tiny_default, monkeypatch):
    monkeypatch.setenv("SPECVIZ_PUBLIC", "1")
    monkeypatch.setenv("SPECVIZ_MAX_PROMPT_TOKENS", "60")
    at = open_page("pages/race.py")
    at.text_area(key="race_prompt").set_value(LONG).run()
    at = click(at, "Start the race")
    assert not at.exception
    prompt_refusal(at)
    assert "race" not in at.session_state
    at = click(at, "Run the K sweep")
    assert not at.exception
    prompt_refusal(at)
    assert "sweep" not in at.session_state


def test_the_workload_page_lists_prompts_over_the_cap_and_runs_the_rest(tiny_default, monkeypatch):
    monkeypatch.setenv("SPECVIZ_PUBLIC", "1")
    monkeypatch.setenv("SPECVIZ_MAX_PROMPT_TOKENS", "60")
    at = open_page("pages/workload.py")
    at.radio[0].set_value("pasted text").run()
    at.text_area[0].set_value(f"def add(a, b):\n---\n{LONG}").run()
    at.sidebar.slider(key="max_new_tokens").set_value(4).run()
    at = click(at, "▶ Measure")
    assert not at.exception
    warned = " ".join(html.unescape(w.value) for w in at.warning)
    assert "this deployment runs prompts of at most 60 tokens" in warned
    assert [r.prompt for r in at.session_state["workload_records"]] == ["def add(a, b):"]


def test_an_operators_bad_prompt_cap_falls_back_to_the_default_and_is_said():
    limits = Limits.from_env({"SPECVIZ_PUBLIC": "1", "SPECVIZ_MAX_PROMPT_TOKENS": "lots"})
    assert limits.max_prompt_tokens == 1024
    assert any("SPECVIZ_MAX_PROMPT_TOKENS='lots'" in p for p in limits.problems)
    assert Limits.from_env({"SPECVIZ_PUBLIC": "1"}).max_prompt_tokens == 1024
    assert not Limits.from_env({}).max_prompt_tokens  # private mode: only the model's context bounds a prompt


def test_the_exactness_labs_real_pair_runs_refuse_a_prompt_over_the_cap(tiny_default, monkeypatch):
    monkeypatch.setenv("SPECVIZ_PUBLIC", "1")
    monkeypatch.setenv("SPECVIZ_MAX_PROMPT_TOKENS", "60")
    at = open_page("pages/exactness.py")
    at.text_input(key="real_prompt").set_value(LONG).run()
    for button in ("real_run", "greedy_run", "exit_run"):
        at.button(key=button).click().run()
        assert not at.exception
        prompt_refusal(at)
    assert "real_result" not in at.session_state and "greedy_result" not in at.session_state
