"""The home page runs speculative and plain decoding on the default pair and reports what the traces say."""

from app_helpers import open_page, page
from streamlit.testing.v1 import AppTest

from specviz.engine.decode import generate
from specviz.engine.loading.catalogue import presets_for
from specviz.engine.loading.models import load_pair
from specviz.ui.controls import first_run_note, first_run_settings


def test_home_shows_a_live_run_with_alpha_tau_and_speedup(tiny_default):
    at = open_page("pages/home.py")
    assert not at.exception
    assert not at.error
    expected = generate(
        load_pair(*tiny_default, device="cpu"),
        presets_for(tiny_default[0])["code"],
        first_run_settings(),  # the first run (the tiny draft recommends no vocabulary)
    )
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["α (accepted / judged)"] == f"{expected.totals.alpha:.2f}"
    assert metrics["τ (tokens per target pass)"] == f"{expected.totals.tau:.2f}"
    assert metrics["Measured speedup vs plain"].endswith("×")
    caption = " ".join(c.value for c in at.caption)  # how it was timed, next to the figure
    assert first_run_note(*tiny_default) in caption  # what the first run is, and why
    assert "sampled at temperature 0.6 (the same seed every repeat): after a warm-up of each, each timed 3" in caption
    assert "median of the 3 repeats; the interval is their range" in caption
    assert "with a recorded bench" in caption  # agrees, disagrees, or not comparable (the tiny pair: another pair)
    html = "".join(m.value for m in at.markdown)
    assert "tok-accepted" in html or "tok-correction" in html


def test_app_entry_point_navigates_to_home(tiny_default):
    at = AppTest.from_file(page("app.py"), default_timeout=60).run()
    assert not at.exception
    assert at.title[0].value.startswith("specviz")


def test_home_reports_a_missing_pair_instead_of_crashing(monkeypatch):
    monkeypatch.setenv("SPECVIZ_TARGET", "/no/such/model")
    at = open_page("pages/home.py")
    assert not at.exception
    assert "is not a directory" in at.error[0].value
