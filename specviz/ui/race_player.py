"""The race's playback: a Components v2 element that reveals each lane's recorded text at its recorded arrival times
with requestAnimationFrame, all lanes at once, with no Python per frame and no message to the server."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

NAME = "specviz.race_player"
KEY = "race_player"
HTML = '<div class="race-player"></div>'
JS = (Path(__file__).with_name("race_player.js")).read_text(encoding="utf-8")
CSS = """
.race-player { font-family: inherit; color: inherit; }
.race-player .bar { display: flex; gap: 0.75rem; align-items: center; margin: 0 0 0.5rem 0; flex-wrap: wrap; }
.race-player button, .race-player select { font: inherit; padding: 0.2rem 0.6rem; border-radius: 0.4rem;
  border: 1px solid rgba(128, 128, 128, 0.5); background: transparent; color: inherit; cursor: pointer; }
.race-player .lanes { display: grid; grid-template-columns: repeat(auto-fill, minmax(18rem, 1fr)); gap: 0.5rem; }
.race-player .lane { border: 1px solid rgba(128, 128, 128, 0.35); border-radius: 0.5rem; padding: 0.5rem 0.75rem;
  min-width: 0; }
.race-player .head { display: flex; justify-content: space-between; gap: 1rem; flex-wrap: wrap; }
.race-player .label { font-weight: 600; }
.race-player .clock { font-variant-numeric: tabular-nums; opacity: 0.85; }
.race-player pre { margin: 0.4rem 0 0 0; white-space: pre-wrap; word-break: break-word; min-height: 1.4em;
  font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 0.9em; }
"""


def race_player(data: dict) -> None:
    """Mount the player with viz.race_charts.playback_data's dict (registered on every run: AppTest and the server
    each keep their own registry; an unchanged definition registers silently)."""
    mount = st.components.v2.component(NAME, html=HTML, css=CSS, js=JS, isolate_styles=True)
    mount(data=data, key=KEY)
