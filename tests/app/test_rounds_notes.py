"""The round page never passes a run off as something it is not: a sidebar changed since the run shown says so
until New run; a recorded trace says its own settings and that its times are another machine's; round 1's verify
time says it holds the first call's warm-up; a last round cut to the token budget says so; a sampled token's tiny q
or p never reads 0.000. And the play speed is labelled with its unit, the phase strip reads as a route, and a
presenter's link (present=1) opens in lecture mode's focus view."""

from app_helpers import click, open_page, page, text

from specviz import methods
from specviz.viz import run_notes
from specviz.viz.steps import PHASE_TITLES
from specviz.viz.text import phase_strip_html

STALE = "The run shown used"


def open_url(params: dict):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(page("app.py"), default_timeout=60)
    at.query_params.update(params)
    return at.switch_page(page("pages/rounds.py")).run()


def warnings(at) -> list[str]:
    return [text(w) for w in at.warning]


def infos(at) -> list[str]:
    return [text(i) for i in at.info]


def markdown(at) -> str:
    return " ".join(text(m) for m in at.markdown)


def test_a_changed_sidebar_is_said_until_new_run_and_the_caption_describes_the_run_shown(tiny_default):
    at = open_page("pages/rounds.py")
    assert not at.exception
    assert not any(STALE in w for w in warnings(at))  # a fresh run is the sidebar's
    at = at.sidebar.slider(key="temperature").set_value(0.0).run()
    stale = [w for w in warnings(at) if STALE in w]
    assert len(stale) == 1
    assert "temperature 0.6 (the sidebar: 0)" in stale[0]  # the first run's (ui.controls.FIRST_RUN)
    assert run_notes.NEW_RUN in stale[0]
    assert any("Sampling at temperature 0.6" in c.value for c in at.caption)  # the run shown, not the sidebar
    at = at.sidebar.radio(key="method").set_value(methods.TREE).run()
    stale = next(w for w in warnings(at) if STALE in w)
    assert f"method {methods.label(methods.DRAFT)} (the sidebar: {methods.label(methods.TREE)})" in stale
    assert "tree shape none (a chain) (the sidebar: " in stale
    at = click(at, run_notes.NEW_RUN)
    assert not at.exception
    assert not any(STALE in w for w in warnings(at))
    assert at.session_state["rounds_trace"].settings.method == methods.TREE
    assert any(c.value.startswith("Greedy (temperature 0)") for c in at.caption)


def test_an_edited_prompt_is_said_too(tiny_default):
    at = open_page("pages/rounds.py")
    at = at.text_area(key="prompt").set_value("def g(y):").run()
    assert any(STALE in w and "a prompt other than the one in the prompt box now" in w for w in warnings(at))


def test_a_bundled_trace_says_its_own_settings_and_that_its_times_were_recorded_elsewhere(monkeypatch):
    monkeypatch.setenv("SPECVIZ_TARGET", "/nonexistent/target")  # a bundled trace needs no model
    at = open_url({"trace": "full-accept-bonus", "round": "2", "phase": "verify"})
    assert not at.exception
    said = next(i for i in infos(at) if "This bundled trace was recorded" in i)
    assert "draft model, K = 4, greedy (T = 0), seed 0, 32 new tokens" in said
    assert "the sidebar's settings do not apply to it" in said
    assert "another machine (cpu, float32)" in said
    assert "they are not this machine's" in said
    assert "ms (recorded on another machine (cpu, float32), not this machine's)" in markdown(at)
    assert not any(STALE in w for w in warnings(at))  # the sidebar is not compared with a recording


def test_round_one_says_its_times_hold_the_warm_up_and_later_rounds_do_not(tiny_default):
    at = open_page("pages/rounds.py")
    at = click(at, "Next phase")  # round 1's verify
    assert "2 · Verify" in next(c.value for c in at.caption if c.value.startswith("Round "))
    assert "(includes first-call warm-up)" in markdown(at)
    assert any(c.value == run_notes.FIRST_ROUND_NOTE for c in at.caption)
    at = click(at, "Next round")
    at = click(at, "Next phase")
    assert "Round 2 of" in next(c.value for c in at.caption if c.value.startswith("Round "))
    assert "first-call warm-up" not in markdown(at)


def test_a_last_round_cut_to_the_token_budget_says_so(monkeypatch):
    monkeypatch.setenv("SPECVIZ_TARGET", "/nonexistent/target")
    at = open_url({"trace": "tree-sibling-accepted", "round": "9", "phase": "draft"})
    assert "(6 of its 14 nodes: trimmed to the token budget, " in markdown(at)
    at = open_url({"trace": "tree-sibling-accepted", "round": "8", "phase": "draft"})
    assert "(14 nodes)" in markdown(at)
    assert "trimmed" not in markdown(at)
    at = open_url({"trace": "full-accept-bonus", "round": "13", "phase": "draft"})
    assert "proposes 2 token(s) (K = 4, trimmed to the token budget: 3 new token(s) left" in markdown(at)


def test_a_sampled_token_with_a_tiny_q_never_reads_zero(monkeypatch):
    monkeypatch.setenv("SPECVIZ_TARGET", "/nonexistent/target")
    at = open_url({"trace": "early-rejection-residual", "round": "2", "phase": "judge", "pos": "2"})
    sentence = [m.value for m in at.markdown if m.value.startswith("**Accepted**")][-1]  # position 2's
    assert "p = 6.0e-05, q = 3.6e-05" in sentence  # q = 3.555e-05 in the trace
    assert "0.000" not in sentence


def test_the_play_speed_is_labelled_with_its_unit():
    at = open_url({"trace": "low-q-accepted"})
    speed = at.select_slider(key="play_speed")
    assert speed.label == "Play speed (seconds per phase)"
    assert speed.proto.label_visibility.value == speed.proto.label_visibility.LabelVisibilityOptions.VISIBLE
    assert speed.format_func(1.0) == "1 s per phase"


def test_the_phase_strip_reads_as_a_route_not_as_buttons():
    strip = phase_strip_html("judge", PHASE_TITLES)
    assert "border:2px" not in strip  # no boxes around each phase
    assert strip.count("cursor:default") == len(PHASE_TITLES)
    assert strip.count("→") == len(PHASE_TITLES) - 1


def test_a_presenters_link_opens_the_focus_view_in_lecture_mode(monkeypatch):
    monkeypatch.setenv("SPECVIZ_TARGET", "/nonexistent/target")
    at = open_url({"trace": "low-q-accepted", "round": "1", "phase": "judge", "pos": "2", "present": "1"})
    assert not at.exception
    assert at.session_state["focus_view"] is True
    assert at.session_state["lecture"] is True
    assert at.query_params["view"] == "focus"
    assert at.query_params["lecture"] == "1"
    assert "present" not in at.query_params  # the collapse is for opening the link, not for every later step
    copy = next(h for h in at.get("html") if "copy-link" in h.proto.body)
    assert "present=1" in copy.proto.body
    assert "round=1&amp;phase=judge&amp;pos=2" in copy.proto.body
