"""The app runs a real speculative run on the default pair and shows what the trace says."""

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from specviz.core.sampling import SamplingSettings
from specviz.core.settings import RunSettings
from specviz.engine.decode import generate
from specviz.engine.models import load_pair

APP = str(Path(__file__).resolve().parents[2] / "app.py")


@pytest.fixture
def tiny_default(model_dirs, monkeypatch):
    target, draft = str(model_dirs["llama-target"]), str(model_dirs["llama-truncated"])
    monkeypatch.setenv("SPECVIZ_TARGET", target)
    monkeypatch.setenv("SPECVIZ_DRAFT", draft)
    return target, draft


def test_app_shows_one_speculative_run(tiny_default):
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception and not at.error
    expected = generate(load_pair(*tiny_default, device="cpu"), at.text_area[0].value, RunSettings(k=4, max_new_tokens=48))
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Rounds (target passes)"] == str(expected.totals.rounds)
    assert metrics["τ (tokens per target pass)"] == f"{expected.totals.tau:.2f}"
    html = "".join(m.value for m in at.markdown)
    assert "tok-accepted" in html or "tok-correction" in html


def test_app_reports_bad_input_instead_of_crashing(tiny_default):
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.text_area[0].set_value("   ").run()
    assert not at.exception
    assert "The prompt is empty" in at.error[0].value
