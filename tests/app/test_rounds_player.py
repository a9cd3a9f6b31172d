"""The round page's default path mounts the in-page player (ui.player) with the run's bundle, the moment the link
named as its start step, the sidebar's lecture mode as its view and the page's other URL parameters; it draws none of
the server path's buttons (whose key shortcuts would also fire), and "Step in the browser" off brings them back."""

import base64
import gzip
import json

import pytest
from app_helpers import click, page

from specviz.core.trace_json import trace_from_json
from specviz.ui import url
from specviz.ui.player import NAME
from specviz.viz import steps
from specviz.viz.player_bundle import load_bundle, step_index

ROOT = page("assets/traces")


@pytest.fixture
def browser_stepping(monkeypatch):
    monkeypatch.delenv("SPECVIZ_STEPPING", raising=False)  # the default a user gets
    monkeypatch.setenv("SPECVIZ_PUBLIC", "1")  # bundled traces only: no model is loaded


def open_link(params: dict[str, str]):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(page("app.py"), default_timeout=60)
    at.query_params.update(params)
    at = at.switch_page(page("pages/rounds.py")).run()
    assert not at.exception and not at.error
    return at


def player_data(at) -> dict | None:
    """The data the page gave the player component, or None when it is not mounted (AppTest runs no JavaScript)."""
    found = [e.proto for e in at.main if getattr(e, "type", "") == "bidi_component"]
    found = [p for p in found if p.component_name == NAME]
    assert len(found) <= 1
    return json.loads(found[0].json) if found else None


@pytest.mark.parametrize(
    "name, moment", [("tree-sibling-accepted", ("2", "verify")), ("early-rejection-residual", ("3", "judge"))]
)
def test_the_player_mounts_with_the_runs_bundle_and_starts_at_the_links_moment(browser_stepping, name, moment):
    at = open_link({"trace": name, "round": moment[0], "phase": moment[1], "lecture": "1", "view": "full"})
    data = player_data(at)
    assert data is not None, "the in-page player is not mounted"
    trace = trace_from_json(open(f"{ROOT}/{name}.json").read())
    bundle = load_bundle(gzip.decompress(base64.b64decode(data["bundle"])).decode("utf-8"))
    assert len(bundle.doc["steps"]) == len(list(steps.moments(trace)))
    assert data["start"] == step_index(trace, at.session_state["rounds_cursor"])
    started = bundle.doc["steps"][data["start"]]
    assert (str(started["round"] + 1), started["phase"]) == moment
    assert data["lecture"] is True and data["focus"] is False
    assert data["params"] == {"trace": name}  # the player writes the moment, view and lecture itself
    assert not [b for b in at.button if b.label in ("Next phase", "Previous phase", "Next round")]


def test_a_rerun_gives_the_player_the_same_data_so_it_keeps_its_moment(browser_stepping):
    at = open_link({"trace": "tree-sibling-accepted", "round": "2", "phase": "verify"})
    first = player_data(at)
    at = at.run()
    assert player_data(at) == first  # Components v2 calls the module again only when its data changes


def test_stepping_on_the_server_is_one_toggle_away(browser_stepping):
    at = open_link({"trace": "tree-sibling-accepted"})
    next(t for t in at.toggle if t.label == "Step in the browser").set_value(False).run()
    assert player_data(at) is None
    before = at.session_state["rounds_cursor"]
    at = click(at, "Next phase")
    assert not at.exception and at.session_state["rounds_cursor"] != before


def test_a_live_run_goes_through_the_player_with_its_settings_in_the_address(tiny_default, monkeypatch):
    monkeypatch.delenv("SPECVIZ_STEPPING", raising=False)
    at = open_link({"round": "2", "phase": "verify", "n": "8"})
    data = player_data(at)
    assert data is not None, "a live run is not shown by the in-page player"
    trace = at.session_state["rounds_trace"]
    assert data["start"] == step_index(trace, at.session_state["rounds_cursor"])
    assert data["params"]["method"] == trace.settings.method and data["params"]["n"] == "8"
    assert data["params"]["prompt"] == trace.prompt
    assert not {"round", "phase", "pos", "view", "lecture"} & set(data["params"])


def as_the_player_writes_it(at, data: dict, moment: dict[str, str]) -> None:
    """The address as the in-page player leaves it after stepping (in the browser: the server is not told)."""
    at.query_params.clear()
    at.query_params.update({**data["params"], **moment, "view": "full"})


def test_the_first_bundled_trace_picked_after_a_live_run_is_the_one_shown_and_named(tiny_default, monkeypatch):
    """A past bug: on a fresh visit the player had rewritten the address (the live run's settings and its moment),
    so the first pick read it as a shared link: the live run stayed and the picker snapped back; a second pick kept
    the live run's settings in the address beside trace=."""
    monkeypatch.delenv("SPECVIZ_STEPPING", raising=False)
    at = open_link({"n": "8"})
    live = player_data(at)
    assert live is not None and "method" in live["params"]
    as_the_player_writes_it(at, live, {"round": "2", "phase": "verify"})
    for name in ("early-rejection-residual", "full-accept-bonus"):
        at = next(s for s in at.selectbox if s.key == "bundled_pick").set_value(name).run()
        assert not at.exception and not at.error
        assert at.session_state["rounds_source"] == url.BUNDLED + name
        assert next(s for s in at.selectbox if s.key == "bundled_pick").value == name
        data = player_data(at)
        assert data["params"] == {"trace": name}
        address = {k: at.query_params[k] for k in at.query_params}
        assert url.replayed(address) == {"trace": name}, address  # no live settings beside the trace's name
        as_the_player_writes_it(at, data, {"round": "1", "phase": "judge", "pos": "1"})
    at = next(s for s in at.selectbox if s.key == "bundled_pick").set_value(url_none(at)).run()
    assert at.session_state["rounds_source"] == "live"
    address = {k: at.query_params[k] for k in at.query_params}
    assert "trace" not in address and address["n"] == "8"


def url_none(at) -> str:
    return next(s for s in at.selectbox if s.key == "bundled_pick").options[0]
