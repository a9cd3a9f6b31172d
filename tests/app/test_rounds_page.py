"""The round-by-round page steps through real rounds and shows exactly what the trace holds."""

import pytest
from app_helpers import click, open_page

from specviz.core.trace import Totals
from specviz.engine.decode import generate
from specviz.engine.loading.catalogue import presets_for
from specviz.engine.loading.models import load_pair
from specviz.ui.controls import first_run_note, first_run_settings
from specviz.viz import steps


def where(at) -> str:
    """The caption line that says where the lecture is: 'Round N of M · i · Phase'."""
    return next(c.value for c in at.caption if c.value.startswith("Round "))


def expected_trace(tiny_default):
    return generate(
        load_pair(*tiny_default, device="cpu"),
        presets_for(tiny_default[0])["code"],
        first_run_settings(),  # the page's first run (the tiny draft has no recommended vocabulary)
    )


@pytest.mark.slow
def test_stepping_three_rounds_matches_the_trace(tiny_default):
    trace = expected_trace(tiny_default)
    at = open_page("pages/rounds.py")
    assert not at.exception
    assert not at.error
    cursor = steps.Cursor()
    for _ in range(60):
        if cursor.round == 3:
            break
        at = click(at, "Next phase")
        assert not at.exception
        cursor = steps.next_step(trace, cursor)
        step = steps.current_step(trace, cursor)
        assert where(at).startswith(f"Round {cursor.round + 1} of {len(trace.rounds)}")
        assert steps.PHASE_TITLES[step.phase] in [h.value for h in at.subheader] or step.phase == steps.JUDGE
        if step.phase == steps.JUDGE:
            pos = trace.rounds[cursor.round].positions[step.position]
            verdict = "**Accepted**" if pos.accepted else "**Rejected**"
            assert any(verdict in m.value and f"{pos.u:.3f}" in m.value for m in at.markdown)
    done = trace.rounds[:3]
    totals = Totals.of(done, 1.0)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Rounds committed"] == "3"
    assert metrics["τ (tokens per target pass)"] == f"{totals.tau:.2f}"
    shown = "".join(m.value for m in at.markdown if "specviz-text" in m.value)
    assert shown.count('class="tok tok-') == 1 + sum(len(r.committed) for r in done)  # prompt + committed tokens


def test_next_round_run_to_end_and_reset(tiny_default):
    trace = expected_trace(tiny_default)
    at = open_page("pages/rounds.py")
    at = click(at, "Next round")
    assert where(at).startswith(f"Round 2 of {len(trace.rounds)}")
    at = click(at, "To the end")
    assert {m.label: m.value for m in at.metric}["Rounds committed"] == str(len(trace.rounds))
    at = click(at, "Reset")
    assert where(at).startswith("Round 1 of")


def test_a_bad_sidebar_setting_is_reported_and_the_trace_is_kept(tiny_default):
    at = open_page("pages/rounds.py")
    at = click(at, "Next round")
    at.sidebar.slider(key="temperature").set_value(0.0).run()
    at.sidebar.slider(key="top_p").set_value(0.5).run()  # top-p with greedy decoding
    assert not at.exception
    assert any("no effect at temperature 0" in e.value for e in at.sidebar.error)
    assert where(at).startswith("Round 2 of")  # the run being watched is not lost


def test_public_mode_caps_the_sidebar_and_hides_custom_pairs(tiny_default, monkeypatch):
    monkeypatch.setenv("SPECVIZ_PUBLIC", "1")
    at = open_page("pages/rounds.py")
    assert not at.exception
    assert at.sidebar.slider(key="k").max == 8
    assert at.sidebar.slider(key="max_new_tokens").max == 64
    assert not any("Custom" in option for option in at.sidebar.selectbox(key="pair_choice").options)
    assert all("/" not in c.value.split("In use:")[-1] for c in at.sidebar.caption if "In use:" in c.value)


def test_switching_precision_loads_the_pair_in_bfloat16_and_runs_there(tiny_default):
    at = open_page("pages/rounds.py")
    at.sidebar.selectbox(key="dtype").set_value("bfloat16").run()
    at = click(at, "Load this pair")
    assert not at.exception
    assert not at.error
    assert at.session_state["active_pair"][3] == "bfloat16"
    assert any("bfloat16 precision" in c.value for c in at.sidebar.caption)
    assert "Load this pair" not in [b.label for b in at.sidebar.button]  # loaded: nothing left to press
    at = click(at, "Next phase")
    assert not at.exception
    assert not at.error


def test_previous_phase_undoes_next_phase_and_the_url_follows(tiny_default):
    at = open_page("pages/rounds.py")
    first = where(at)
    at = click(at, "Next phase")
    assert where(at) != first
    assert at.query_params["phase"] == "verify"
    at = click(at, "Previous phase")
    assert where(at) == first
    assert at.query_params["phase"] == "draft"
    assert at.query_params["round"] == "1"
    assert at.query_params["t"] == "0.6"  # the rounds page starts sampling (the first run), and says why
    assert any("Sampling at temperature 0.6" in c.value for c in at.caption)
    assert first_run_note(*tiny_default) in [c.value for c in at.caption]


def test_a_url_opens_a_bundled_trace_at_its_moment_with_no_model(monkeypatch):
    monkeypatch.setenv("SPECVIZ_TARGET", "/nonexistent/target")  # a bundled trace needs no model at all
    from app_helpers import page
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(page("app.py"), default_timeout=60)
    at.query_params.update({"trace": "low-q-accepted", "round": "1", "phase": "judge", "pos": "2"})
    at = at.switch_page(page("pages/rounds.py")).run()
    assert not at.exception
    assert "3 · Accept or reject (position 2 of 4)" in where(at)
    assert any("**Accepted**" in m.value for m in at.markdown)
    at = click(at, "Next rejection")
    assert "Accept or reject" in where(at)
    assert any("**Rejected**" in m.value for m in at.markdown)
    assert at.query_params["trace"] == "low-q-accepted"


def test_url_settings_reach_the_sidebar_and_the_run(tiny_default):
    from app_helpers import page
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(page("app.py"), default_timeout=60)
    at.query_params.update({"t": "0", "k": "2", "n": "8", "seed": "3", "round": "2", "phase": "verify"})
    at = at.switch_page(page("pages/rounds.py")).run()
    assert not at.exception
    assert at.sidebar.slider(key="temperature").value == 0.0
    assert at.sidebar.slider(key="k").value == 2
    assert where(at).startswith("Round 2 of")
    assert "2 · Verify" in where(at)
