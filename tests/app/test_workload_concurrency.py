"""The workload page's load view (vLLM mode): before any sweep it shows the recorded one with the roofline for the
same pair on this machine beside it (and says it is the recorded one); the sweep's own inputs refuse bad levels and,
in public mode, more requests in flight than the deployment allows or a server it does not list, before any request.
A sweep's faults against scripted servers (an overload, a timeout, other clients) reach the page as messages, the
finished levels kept. A sweep against real servers: tests/remote/test_vllm_concurrency.py."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from app_helpers import click, open_page, text

from specviz.viz.concurrency_charts import ROOFLINE

sys.path.insert(0, str(Path(__file__).parents[1] / "remote"))
from scripted_vllm import refusal, scripted_vllm, stall  # noqa: E402

SERVER = "a vLLM server"


def server_mode(at):
    at.radio(key="where").set_value(SERVER).run()
    return at


def captions(at) -> str:
    return " ".join(c.value for c in at.caption)


def test_the_recorded_sweep_shows_with_the_roofline_beside_it(tiny_default):
    at = server_mode(open_page("pages/workload.py"))
    assert not at.exception
    assert "Under load: speculative against plain, by concurrency" in [s.value for s in at.subheader]
    said = captions(at)
    assert "Recorded with" in said and "Measure your own servers above" in said
    assert "against the roofline" in said and "measured at load" in said
    specs = [json.loads(chart.proto.spec) for chart in at.get("vega_lite_chart")]
    load_chart = [s for s in specs if "Does speculation still pay under load" in json.dumps(s)]
    assert len(load_chart) == 1
    assert ROOFLINE in json.dumps(load_chart[0])  # its layers draw the prediction, not only the caption quotes it
    assert [b.label for b in at.get("download_button")][-2:] == [
        "Download the sweep (JSON)",
        "Download the sweep (CSV)",
    ]


def test_levels_that_are_not_whole_numbers_are_refused_and_the_button_waits(tiny_default):
    at = server_mode(open_page("pages/workload.py"))
    at.text_input(key="load_levels").set_value("1,two").run()
    assert any("The concurrency levels field takes whole numbers" in e.value for e in at.error)
    assert at.button(key="measure_load").disabled


def test_public_mode_refuses_more_requests_in_flight_than_it_allows_before_any_request(tiny_default, monkeypatch):
    monkeypatch.setenv("SPECVIZ_PUBLIC", "1")
    monkeypatch.setenv("SPECVIZ_MAX_CONCURRENCY", "4")
    monkeypatch.setenv("SPECVIZ_SERVERS", "127.0.0.1:9")
    at = server_mode(open_page("pages/workload.py"))
    assert "at most 4" in at.text_input(key="load_levels").label
    at.text_input(key="load_levels").set_value("1,8").run()
    at = click(at, "▶ Run the load sweep")
    assert any("at most 4 requests in flight; 8 asks more" in e.value for e in at.error)


def test_public_mode_refuses_a_server_it_does_not_list(tiny_default, monkeypatch):
    monkeypatch.setenv("SPECVIZ_PUBLIC", "1")
    monkeypatch.setenv("SPECVIZ_SERVERS", "127.0.0.1:9")
    at = server_mode(open_page("pages/workload.py"))
    at.text_input(key="server_url").set_value("http://192.0.2.1:8000").run()
    at = click(at, "▶ Run the load sweep")
    assert not at.exception
    errors = " ".join(text(e) for e in at.error)
    assert "only the servers its operator listed in SPECVIZ_SERVERS" in errors
    assert "not one of them" in errors


# ----------------------------------------------------------------------- faults of a sweep against scripted servers
LEVEL_1 = 3  # one prompt at concurrency 1: a warm-up request and two counted ones


def sweep_page(spec_url: str, plain_url: str, timeout_s: int | None = None):
    """The load view's sweep over one pasted prompt at concurrency 1 and 2, 4 tokens each."""
    at = server_mode(open_page("pages/workload.py"))
    at.radio[0].set_value("pasted text").run()
    at.text_area[0].set_value("def f():").run()
    at.sidebar.slider(key="max_new_tokens").set_value(4).run()
    at.text_input(key="server_url").set_value(spec_url)
    at.text_input(key="load_baseline").set_value(plain_url)
    at.text_input(key="load_levels").set_value("1,2")
    if timeout_s is not None:
        at.number_input(key="load_timeout").set_value(timeout_s)
    return click(at.run(), "▶ Run the load sweep")


@pytest.mark.parametrize(
    "fault, timeout_s, said",
    [
        (lambda n: refusal(429) if n >= LEVEL_1 else None, None, "answered HTTP 429 (Too Many Requests) to"),
        (lambda n: stall(2.5) if n >= LEVEL_1 else None, 1, "did not finish a request within the 1 s timeout"),
    ],
    ids=["overloaded", "timeout"],
)
def test_a_sweep_fault_is_shown_with_the_finished_level_kept(tiny_default, fault, timeout_s, said):
    with scripted_vllm(fault=fault) as (spec_url, _), scripted_vllm(speculative=False) as (plain_url, _):
        at = sweep_page(spec_url, plain_url, timeout_s)
    assert not at.exception
    errors = " ".join(text(e) for e in at.error)
    assert f"{spec_url} {said}" in errors and "at concurrency 2" in errors
    assert "The levels finished before are kept." in errors
    doc = at.session_state["load_sweep"]
    assert [level["concurrency"] for level in doc["levels"]] == [1]
    assert "Measured on" in captions(at)  # level 1 on screen, not the recorded sweep
    at = at.run()  # a later rerun still says why the sweep stopped
    assert f"{spec_url} {said}" in " ".join(text(e) for e in at.error)


def test_other_clients_on_the_plain_server_are_a_warning_on_the_page(tiny_default):
    with (
        scripted_vllm(metrics=True) as (spec_url, _),
        scripted_vllm(speculative=False, metrics=True, others=1) as (plain_url, _),
    ):
        at = sweep_page(spec_url, plain_url)
    assert not at.exception and not at.error
    warnings = [text(w) for w in at.warning if "other clients used the server" in text(w)]
    assert [w.split(",")[0] for w in warnings] == ["Concurrency 1", "Concurrency 2"]
    assert all(plain_url in w and "not the sweep's alone" in w for w in warnings)


def test_public_mode_names_the_sweeps_models_without_a_local_path():
    """What the load view shows and downloads (the recorded sweep too) names its models as public mode may."""
    from specviz.ui.concurrency_view import recorded_sweep
    from specviz.ui.limits import Limits
    from specviz.ui.workload import shown_document

    recorded = recorded_sweep()
    assert "/work/" in json.dumps(recorded)  # recorded in a worktree: a local path
    shown = shown_document(recorded, Limits(public=True))
    assert "/work/" not in json.dumps({k: shown[k] for k in ("baseline", "servers")})
    assert shown["levels"] == recorded["levels"]  # the figures untouched
