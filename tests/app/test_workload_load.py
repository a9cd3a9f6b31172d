"""The workload page's load view (vLLM mode): before any sweep it shows the recorded one with the roofline for the
same pair on this machine beside it (and says it is the recorded one); the sweep's own inputs refuse bad levels and,
in public mode, more requests in flight than the deployment allows or a server it does not list, before any request.
A sweep against real servers: tests/remote/test_vllm_load.py."""

from __future__ import annotations

import json

from app_helpers import click, open_page, text

from specviz.viz.load_charts import ROOFLINE

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
    at = click(at, "▶ Measure under load")
    assert any("at most 4 requests in flight; 8 asks more" in e.value for e in at.error)


def test_public_mode_refuses_a_server_it_does_not_list(tiny_default, monkeypatch):
    monkeypatch.setenv("SPECVIZ_PUBLIC", "1")
    monkeypatch.setenv("SPECVIZ_SERVERS", "127.0.0.1:9")
    at = server_mode(open_page("pages/workload.py"))
    at.text_input(key="server_url").set_value("http://192.0.2.1:8000").run()
    at = click(at, "▶ Measure under load")
    assert not at.exception
    errors = " ".join(text(e) for e in at.error)
    assert "only the servers its operator listed in SPECVIZ_SERVERS" in errors
    assert "not one of them" in errors
