"""Public mode keeps its promises from every page, link and upload (K, tree and token caps from a link or a form,
trace uploads over the size cap, no local path in exports or the sidebar), and a link with out-of-range values
neither raises nor poisons the session."""

from __future__ import annotations

import html
from pathlib import Path

import pytest
from app_helpers import open_page, page

from specviz.ui.limits import Limits, shown_meta

FIXTURES = Path(__file__).parents[1] / "fixtures" / "regression"


def open_link(params: dict[str, str], name: str = "pages/rounds.py"):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(page("app.py"), default_timeout=60)
    at.query_params.update(params)
    return at.switch_page(page(name)).run()


@pytest.mark.parametrize(
    "params, key, expected",
    [
        ({"k": "0"}, "k", 1),
        ({"k": "-3"}, "k", 1),
        ({"n": "-5"}, "max_new_tokens", 1),
        ({"n": "0"}, "max_new_tokens", 1),
        ({"t": "5"}, "temperature", 2.0),
        ({"t": "-1"}, "temperature", 0.0),
        ({"t": "1", "top_p": "0"}, "top_p", 0.05),
        ({"t": "1", "top_p": "5"}, "top_p", 1.0),
    ],
)
def test_out_of_range_link_values_are_fitted_said_and_do_not_poison_the_session(tiny_default, params, key, expected):
    at = open_link({**params, "n": params.get("n", "4")})
    assert not at.exception
    assert at.session_state[key] == expected
    assert any("outside what this app allows" in i.value for i in at.info)
    at = at.switch_page(page("pages/workload.py")).run()  # every other page with the sidebar still works
    assert not at.exception
    at = at.switch_page(page("pages/race.py")).run()
    assert not at.exception


def test_unreadable_and_unknown_link_values_are_said(tiny_default):
    at = open_link({"t": "abc", "method": "banana", "n": "4"})
    assert not at.exception
    notes = " ".join(i.value for i in at.info)
    assert "not a number" in notes
    assert "banana" in notes


def test_public_mode_caps_k_from_a_link(tiny_default, monkeypatch):
    monkeypatch.setenv("SPECVIZ_PUBLIC", "1")
    at = open_link({"k": "16", "n": "500", "t": "1", "method": "draft"})
    assert not at.exception
    trace = at.session_state["rounds_trace"]
    assert trace.settings.k == 8
    assert trace.settings.max_new_tokens == 64


@pytest.mark.parametrize(
    "tree, message", [(",".join(["1"] * 16), "up to 8 deep"), ("4,4,4,2", "up to 64 nodes")], ids=["deep", "wide"]
)
def test_public_mode_refuses_trees_past_its_caps(tiny_default, monkeypatch, tree, message):
    monkeypatch.setenv("SPECVIZ_PUBLIC", "1")
    at = open_link({"method": "tree", "tree": tree, "n": "8", "t": "1"})
    assert not at.exception
    assert any(message in e.value for e in at.sidebar.error)
    assert "rounds_trace" not in at.session_state  # nothing ran
    said = [e.value for e in at.error] + [c.value for c in at.sidebar.caption if c.value.startswith("Tree ")]
    assert len(said) == 1, said  # the refusal once, in place of the shape's caption (which only repeated its size)


def test_public_mode_caps_the_workload_pages_k_values(tiny_default, monkeypatch):
    monkeypatch.setenv("SPECVIZ_PUBLIC", "1")
    at = open_page("pages/workload.py")
    assert not at.exception
    ks = next(m for m in at.multiselect if m.label == "K values")
    assert max(ks.options) == 8 or max(int(o) for o in ks.options) == 8


def test_trace_uploads_over_the_cap_are_refused_before_parsing(tiny_default, monkeypatch):
    monkeypatch.setenv("SPECVIZ_PUBLIC", "1")
    monkeypatch.setenv("SPECVIZ_MAX_UPLOAD_KB", "50")
    big = (FIXTURES / "tree_t1_2211.json").read_bytes()
    assert len(big) > 50_000
    at = open_page("pages/rounds.py")
    before = at.session_state["rounds_trace"]
    at.file_uploader(key="trace_upload").set_value(("big.json", big, "application/json")).run()
    assert not at.exception
    assert any("limited to 50 kB" in html.unescape(e.value) for e in at.error)
    assert at.session_state["rounds_trace"] is before  # what the visitor had is kept


def test_public_mode_caps_the_exactness_labs_real_pair_runs(tiny_default, monkeypatch):
    monkeypatch.setenv("SPECVIZ_PUBLIC", "1")
    at = open_page("pages/exactness.py")
    assert not at.exception
    assert at.slider(key="greedy_tokens").max <= 64
    assert at.slider(key="greedy_k").max <= 8
    assert max(at.select_slider(key="real_samples").options, key=int) in ("200", 200)
    assert at.slider(key="real_budget").max <= 20


def test_public_mode_exports_and_sidebar_name_no_local_path(tiny_default, monkeypatch):
    monkeypatch.setenv("SPECVIZ_PUBLIC", "1")
    at = open_page("pages/rounds.py")
    assert not at.exception
    trace = at.session_state["rounds_trace"]
    assert trace.meta["target"].startswith("/")  # the run itself knows where its models are
    meta = shown_meta(trace.meta, Limits.from_env())  # what the page's download hands out
    assert "/" not in meta["target"]
    assert "/" not in meta["draft"]
    assert all("/" not in c.value.split("In use:")[-1] for c in at.sidebar.caption if "In use:" in c.value)


def test_the_bundled_pair_is_recorded_relative_to_the_repository():
    from specviz.engine.loading.models import BUNDLED_DRAFT, BUNDLED_TARGET, recorded_name

    assert recorded_name(BUNDLED_TARGET) == "assets/models/pystdlib/target"
    assert recorded_name(BUNDLED_DRAFT) == "assets/models/pystdlib/draft"
    assert recorded_name("HuggingFaceTB/SmolLM2-135M") == "HuggingFaceTB/SmolLM2-135M"


@pytest.mark.parametrize(
    "env, problem",
    [
        ({"SPECVIZ_PUBLIC": "enabled"}, "public mode is on"),
        ({"SPECVIZ_PUBLIC": "2"}, "public mode is on"),
        ({"SPECVIZ_PUBLIC": "1", "SPECVIZ_MAX_K": "abc"}, "SPECVIZ_MAX_K='abc'"),
        ({"SPECVIZ_PUBLIC": "1", "SPECVIZ_MAX_NEW_TOKENS": "-3"}, "SPECVIZ_MAX_NEW_TOKENS='-3'"),
    ],
)
def test_a_deployments_bad_settings_fail_closed_with_a_message(tiny_default, monkeypatch, env, problem):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    limits = Limits.from_env()
    assert limits.public
    assert limits.max_k == 8
    assert limits.max_new_tokens == 64
    at = open_page("pages/rounds.py")
    assert not at.exception
    assert any(problem in html.unescape(w.value) for w in at.sidebar.warning)  # shown as text
    assert at.sidebar.slider(key="k").max == 8


def test_private_mode_only_when_asked_plainly():
    for value in ("", "0", "false", "no", "off", " OFF "):
        assert not Limits.from_env({"SPECVIZ_PUBLIC": value}).public
    assert Limits.from_env({"SPECVIZ_PUBLIC": "1", "SPECVIZ_MAX_K": "99"}).max_k == 16
    assert Limits.from_env({"SPECVIZ_PUBLIC": "1", "SPECVIZ_MAX_K": "99"}).problems


def test_public_mode_shows_error_types_not_tracebacks(tiny_default, monkeypatch):
    import streamlit as st

    monkeypatch.setenv("SPECVIZ_PUBLIC", "1")
    open_page("pages/home.py")
    assert st.get_option("client.showErrorDetails") == "type"
    st.set_option("client.showErrorDetails", "full")


def test_a_bad_allowlist_entry_is_said_at_start_up(tiny_default, monkeypatch):
    monkeypatch.setenv("SPECVIZ_PUBLIC", "1")
    monkeypatch.setenv("SPECVIZ_SERVERS", "127.0.0.1:8000, ::1")
    assert any("'::1'" in p for p in Limits.from_env().problems)
    at = open_page("pages/workload.py")
    assert not at.exception
    assert any("measures no server" in w.value for w in at.sidebar.warning)


def test_the_workload_says_which_cap_it_applies(tiny_default, monkeypatch):
    monkeypatch.setenv("SPECVIZ_PUBLIC", "1")
    at = open_page("pages/workload.py")
    at.radio[0].set_value("pasted text").run()
    at.text_area[0].set_value("\n---\n".join(f"x = {i}" for i in range(30))).run()
    assert not at.exception
    shown = " ".join(html.unescape(c.value) for c in [*at.caption, *at.warning, *at.info])
    assert "20" in shown
    assert "500" not in shown
    at.text_area[0].set_value("\n---\n".join(f"x = {i}" for i in range(600))).run()
    assert any("a file holds at most 500" in html.unescape(e.value) for e in at.error)


def test_a_links_out_of_range_values_are_said_with_what_was_given_and_what_is_allowed(tiny_default):
    """ee=99999 and dv=99999999999: the note names the link's parameter, the value given (in full, not 1e+11), the
    range allowed and the value used; E is fitted to the target's own layers, so no second message contradicts it."""
    at = open_link({"method": "early_exit", "ee": "99999", "dv": "99999999999", "n": "4"})
    assert not at.exception
    notes = [html.unescape(i.value) for i in at.info]
    assert any(
        "The link's dv (the draft vocabulary) = 99999999999 is outside what this app allows here, 0 to 1000000: "
        "using 1000000." in n
        for n in notes
    ), notes
    said = next(n for n in notes if "The link's ee" in n)
    assert said.startswith("The link's ee (the exit layer E) = 99999 is outside what this app allows here, 1 to 2")
    assert "this target has L = 3 layers" in said and said.endswith("using 2.")
    assert at.session_state["exit_layer"] == 2
    assert not at.error  # the run goes ahead at E = 2: no refusal naming a value nobody gave


def test_an_uploaded_trace_of_one_round_is_said_in_the_singular(tiny_default, monkeypatch):
    import json

    from specviz.core.trace_json import trace_from_json, trace_to_json

    doc = json.loads((Path(__file__).parents[2] / "assets" / "traces" / "full-accept-bonus.json").read_text())
    doc["rounds"] = doc["rounds"][:1]
    one = trace_to_json(trace_from_json(json.dumps(doc)))
    at = open_page("pages/rounds.py")
    at.file_uploader(key="trace_upload").set_value(("one.json", one.encode(), "application/json")).run()
    assert not at.exception
    said = [html.unescape(s.value) for s in at.success]
    assert any(s.startswith("Replaying a trace of 1 round from one.json") for s in said), said


def test_public_mode_offers_only_the_operators_pairs_in_the_menu_and_from_a_link(tiny_default, monkeypatch):
    """A hub pair would download gigabytes on one click: public mode offers the pairs that need none, or the
    operator's SPECVIZ_PAIRS, and a link naming another says so instead of offering it."""
    monkeypatch.setenv("SPECVIZ_PUBLIC", "1")
    at = open_link({"pair": "qwen2.5-1.5b", "n": "4"})
    assert not at.exception
    menu = at.sidebar.selectbox(key="pair_choice").options  # labels: the first is the operator's default pair
    assert (
        len(menu) == 3 and "smollm2" in menu[1] and "smollm2-pystdlib" in menu[2] and not any("Qwen" in o for o in menu)
    )
    said = [n for n in (html.unescape(i.value) for i in at.info) if "qwen2.5-1.5b" in n]
    assert said and "which this server does not offer (it offers pystdlib, smollm2, smollm2-pystdlib)" in said[0]
    assert at.session_state["pair_choice"] != "qwen2.5-1.5b"
    monkeypatch.setenv("SPECVIZ_PAIRS", "pystdlib,qwen2.5-1.5b,nosuch")
    at = open_page("pages/rounds.py")
    assert any("Qwen2.5-1.5B" in o for o in at.sidebar.selectbox(key="pair_choice").options)
    assert any("SPECVIZ_PAIRS names 'nosuch'" in html.unescape(w.value) for w in at.sidebar.warning)
