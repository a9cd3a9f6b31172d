"""Streamlit renderers shared by pages: coloured text, lecture-mode styling, cached runs."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd
import streamlit as st

from specviz import methods
from specviz.core.settings import RunSettings
from specviz.core.suffix_tree import SuffixMemory
from specviz.core.trace import Trace
from specviz.core.trace_json import trace_from_json
from specviz.engine.decode import encode_prompt, generate
from specviz.measure.bench import environment
from specviz.measure.race import VersusPlain, versus_plain
from specviz.ui.hall import in_the_hall
from specviz.ui.header import LECTURE_CSS, apply_lecture_mode, lecture_on, page_header, show_html  # noqa: F401 (re-exported)
from specviz.ui.limits import Limits
from specviz.ui.loaders import cached_pair
from specviz.viz import tables
from specviz.viz.export_html import export_html
from specviz.viz.layout import lectured, readable
from specviz.viz.lectures import prebuilt_page
from specviz.viz.player_bundle import player_bundle
from specviz.viz.text import legend_html, trace_html

TRACES_DIR = Path(__file__).resolve().parents[2] / "assets" / "traces"


def draw(where, chart, lecture: bool | None = None) -> None:
    """Every chart of the app: titles wrapped to fit (never clipped), full width, projector-sized text in lecture mode
    (viz.layout.lectured, applied here so the chart builders stay composable); `lecture` None: the session's mode."""
    if lecture is None:
        lecture = lecture_on()
    if lecture:
        chart = lectured(chart)
    else:
        chart = readable(chart)
    where.altair_chart(chart, width="stretch")


def show_table(where, frame, key: str | None = None, formats: dict[str, str] | None = None) -> None:
    """Every table of the app: human headers, readable number formats, the key columns first and wide enough to
    read (viz.tables says which; this turns it into Streamlit's column_config). formats: column -> printf format,
    for a table whose columns no entry of viz.tables names and must read alike (the two-token table's tokens)."""
    frame = pd.DataFrame(frame)
    frame.columns = [str(c) for c in frame.columns]
    for name in frame.columns:  # numbers with a "—" gap read as text: Arrow takes one type a column (else it logs a
        if frame[name].dtype == object and frame[name].map(type).nunique() > 1:  # traceback and converts each run)
            frame[name] = frame[name].map(str)
    numeric = {c: frame[c].tolist() for c in frame.columns if pd.api.types.is_numeric_dtype(frame[c])}
    config = {}
    for name, spec in tables.column_specs(list(frame.columns), numeric).items():
        spec = replace(spec, format=(formats or {}).get(name, spec.format))
        common = {"label": spec.header, "width": spec.width, "help": spec.help}
        if spec.format == tables.P_VALUE:
            frame[name] = frame[name].map(tables.format_p)
            config[name] = st.column_config.TextColumn(**common)
        elif name in numeric and not pd.api.types.is_bool_dtype(frame[name]) and spec.format:
            config[name] = st.column_config.NumberColumn(format=spec.format, **common)
        else:
            config[name] = st.column_config.Column(**common)
    order = tables.column_order(list(frame.columns))
    where.dataframe(frame, hide_index=True, column_config=config, column_order=order, key=key)


TEXT_TABLE_CSS = "<style>[data-testid='stTable'] td *{overflow-wrap:anywhere}</style>"  # a cell's link breaks in it


def show_text_table(where, frame) -> None:
    """A table whose cells are sentences (what a sampler does, where a bug was reported): a static table, so every
    cell wraps and is read whole (the grid of show_table cuts a long cell at its column's width), in lecture mode at
    projector size; the same headers, number formats and column order as show_table."""
    frame = pd.DataFrame(frame)
    frame.columns = [str(c) for c in frame.columns]
    for name in frame.columns:  # numbers with a "—" gap read as text: Arrow takes one type a column (else it logs a
        if frame[name].dtype == object and frame[name].map(type).nunique() > 1:  # traceback and converts each run)
            frame[name] = frame[name].map(str)
    numeric = {c: frame[c].tolist() for c in frame.columns if pd.api.types.is_numeric_dtype(frame[c])}
    specs = tables.column_specs(list(frame.columns), numeric)
    shown = pd.DataFrame(
        {
            specs[name].header: [tables.cell_text(v, specs[name], name in numeric) for v in frame[name]]
            for name in tables.column_order(list(frame.columns))
        }
    )
    where.html(TEXT_TABLE_CSS)
    where.table(shown, hide_index=True)


def show_text(trace: Trace, n_rounds: int | None = None) -> None:
    show_html(trace_html(trace, n_rounds))
    show_html(legend_html())


def cached_versus_plain(
    sources: tuple[str, str, str, str], prompt: str, settings: RunSettings
) -> tuple[VersusPlain, str, dict]:
    """The home page's measurement, the time it was taken ("HH:MM UTC") and where (measure.bench.environment, with
    the load average the runs met): run in the lecture hall's pool and kept there for the whole server, so every
    session sees the same run and the page says when and where it was measured (finished even if its tab closes)."""
    pair = cached_pair(*sources)
    check_prompt_cost(pair, prompt)

    def measure() -> tuple[VersusPlain, str, dict]:
        measured_at = datetime.now(UTC).strftime("%H:%M UTC on %d %b")
        return versus_plain(pair, prompt, settings), measured_at, environment(pair)

    return in_the_hall(
        "versus_plain", (sources, prompt, settings), measure, running="Timing plain and speculative", finish_alone=True
    )


def check_prompt_cost(pair, prompt: str, limits: Limits | None = None) -> None:
    """Refuse, in public mode and before anything is queued, a prompt over the deployment's token cap (the prompt
    given here is what the model reads: its chat template applied)."""
    limits = limits or Limits.from_env()
    if limits.public:
        limits.check_prompt_tokens(len(encode_prompt(pair, prompt)))


def cached_run(sources: tuple[str, str, str, str], prompt: str, settings: RunSettings) -> Trace:
    """A finished run, from the lecture hall (one pool of model runs for every session: equal runs are one, and a
    finished one is handed out again): same seed, same trace, so sharing changes nothing shown.

    sources = (target, draft, device, dtype), as `active_sources()` gives them."""
    pair = cached_pair(*sources)  # loaded here, with its spinner, before the run queues
    check_prompt_cost(pair, prompt)
    return in_the_hall("run", (sources, prompt, settings), lambda: generate(pair, prompt, settings))


SUFFIX_MEMORY = "suffix_memory"  # session_state: what suffix decoding remembers of this session's runs


def session_memory() -> SuffixMemory:
    """What suffix decoding remembers of this browser session's earlier runs (its global trie), never another's."""
    return st.session_state.setdefault(SUFFIX_MEMORY, SuffixMemory())


def page_run(sources: tuple[str, str, str, str], prompt: str, settings: RunSettings) -> Trace:
    """A run for a page: from the server's run cache, except for a method that learns from this session's earlier
    runs (suffix decoding), which runs afresh with the session's memory (a cached run would be another session's)."""
    if methods.get(settings.method).remembers:
        pair, memory = cached_pair(*sources), session_memory()
        check_prompt_cost(pair, prompt)
        run = lambda: generate(pair, prompt, settings, memory=memory)  # noqa: E731
        return in_the_hall("run", (sources, prompt, settings), run, cache=False)
    return cached_run(sources, prompt, settings)


@st.cache_data
def bundled_traces() -> dict[str, dict]:
    """The recorded lecture traces (assets/traces/index.json): name -> title, what it shows and its moment."""
    path = TRACES_DIR / "index.json"
    return json.loads(path.read_text()) if path.exists() else {}


@st.cache_data(max_entries=16)
def load_bundled_trace(name: str) -> Trace:
    """A bundled trace by name, replayed with no model."""
    return trace_from_json((TRACES_DIR / bundled_traces()[name]["file"]).read_text())


@st.cache_data(show_spinner=False, max_entries=16)
def cached_player_bundle(trace_json: str, title: str = "", about: str = "", live: bool = False) -> dict:
    """A run's player bundle (viz.player_bundle), built once per trace for the whole server and shared by every
    session: building every step's charts in every view takes seconds, handing it out again takes none. live: the
    round page's own run, timed on this machine."""
    return player_bundle(trace_from_json(trace_json), title, about, live=live)


@st.cache_data(show_spinner=False, max_entries=16)
def cached_export_html(trace_json: str, title: str = "", about: str = "") -> bytes:
    """A run as the offline HTML file (python -m specviz export-html gives the same): a bundled lecture's prebuilt page,
    else built from the cached bundle."""
    page = prebuilt_page(trace_from_json(trace_json), title, about)
    return (page or export_html(cached_player_bundle(trace_json, title, about))).encode("utf-8")
