"""The workload page's drivers: measure on this app's models or through a server, and compare the two engines.

Each result goes into the session as it arrives, so a Stop (which ends the script) or a server that fails midway
keeps what was measured. The measuring itself is in measure/ (local.py, workload.py) and remote/ (vllm.py,
agreement.py); here are the progress bars and the session.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import replace

import streamlit as st

from specviz import methods
from specviz.core.sampling import SamplingSettings
from specviz.core.settings import RunSettings
from specviz.engine.loading.catalogue import uses_chat
from specviz.engine.loading.models import ModelPair
from specviz.errors import SettingsError, SpecvizError
from specviz.measure.bench import environment
from specviz.measure.concurrency import failure_words
from specviz.measure.identity import local_engine_for, local_pair_for
from specviz.measure.local import engine_source, step_costs
from specviz.measure.prompts import PromptRow, wrapped_rows
from specviz.measure.summary import compare_measurements, measurement_figures
from specviz.measure.workload import run_workload
from specviz.remote.agreement import compare_engines, ngram_misses, remembered
from specviz.remote.concurrency import connect_plain, sweep_documents
from specviz.remote.http import DEFAULT_TIMEOUT_S
from specviz.remote.vllm import Server, connect, measure
from specviz.ui.limits import Limits, display_source
from specviz.ui.loaders import cached_pair
from specviz.ui.render import session_memory
from specviz.viz.text import literal, user_message
from specviz.viz.workload_charts import agreement_row

RECORDS, PLANNED, SETTINGS, STOPPED = "workload_records", "workload_planned", "workload_settings", "workload_stopped"
MEASUREMENT, HISTORY = "workload_measurement", "workload_history"  # this measurement's id and key; earlier ones
ENVIRONMENT = "workload_environment"
LOAD = "load_sweep"  # the load sweep's specviz.load document, rebuilt after each finished level


def too_many_note(available: int, cap: int) -> str | None:
    """The note shown when a workload has more prompts than one run takes."""
    return (
        f"only the first {cap} of {available} prompts run at once (this app's cap per run)" if available > cap else None
    )


def clear_results(planned: int | None = None) -> None:
    """Forget the measured results (and, given `planned`, say how many the next run will measure)."""
    st.session_state[RECORDS] = []
    st.session_state.pop(STOPPED, None)
    if planned is not None:
        st.session_state[PLANNED] = planned


RESULTS = "results (prompt × method × K)"  # the one name of a result, in the progress bar and under it


def measured_words(done: int, planned: int, repeats: int, served: bool = False) -> str:
    """'12 of 12 results (prompt × method × K) measured, each timed 2 times against plain runs of the same prompt':
    the count under a finished run, in the progress bar's words (progress_text)."""
    if served:
        return f"{done} of {planned} prompts measured"
    timed = "timed once" if repeats == 1 else f"timed {repeats} times"
    return f"{done} of {planned} {RESULTS} measured, each {timed} against plain runs of the same prompt"


def progress_text(done: int, total: int, repeats: int, served: bool = False) -> str:
    """'6 of 24 timed runs: 12 results (prompt × method × K), each timed 2 times': the progress bar's count, which
    names what measured_words counts after the run."""
    if served:
        return f"{done} of {total} prompts through the server"
    timed = "timed once" if repeats == 1 else f"timed {repeats} times"
    return f"{done} of {total} timed runs: {total // max(1, repeats)} {RESULTS}, each {timed}"


def progress_bar(repeats: int = 1, served: bool = False):
    """A progress bar and the callback run_workload and measure report to: done / total, time left, the prompt."""
    bar = st.progress(0.0, text="Warming up…")

    def progress(p) -> None:
        eta = "" if p.done == 0 else f" · about {p.eta_s:.0f} s left"
        text = f"{progress_text(p.done, p.total, repeats, served)}{eta} · {user_message(p.prompt)[:60]!r}"
        bar.progress(p.done / max(1, p.total), text=text)

    return bar, progress


def open_server(
    url: str, model: str, api_key: str, method: str, limits: Limits, timeout_s: float = DEFAULT_TIMEOUT_S
) -> Server:
    """Connect (public mode: only a listed host, refused before any request). Never stored: it holds the key."""
    limits.check_server(url)
    return connect(url.strip(), model.strip() or None, api_key or None, timeout_s, method)


def whole_family(settings: RunSettings | None, target: str, draft: str | None) -> tuple[list[str], list[str]]:
    """The page's "the whole family": every method the pair in use can run (the heads found beside its target, early
    exit at the sidebar's E), and "name: why not" for each one left out."""
    from specviz.ui.controls import exit_layer_fits, heads_beside

    heads = heads_beside(target)  # as the sidebar and the race find them
    has_draft = bool(draft) and str(draft).strip().lower() != methods.NGRAM
    hint = "`python -m specviz train-tiny` trains each kind for the bundled target"
    return methods.whole_family(has_draft, heads, exit_layer_fits(settings, target) or "", hint)


def server_summary(server: Server, limits: Limits, asked: str, pairs: Sequence[tuple[str, str]]) -> dict:
    """What "Check connection" shows, with names as public mode may show them, and the local pair (among `pairs`)
    that serves the same target, for the engine comparison."""
    shown = lambda source: display_source(source, limits)  # noqa: E731
    return {
        **server.describe(),
        "model": shown(server.model),
        "models": [shown(m) for m in server.models],
        "per_request": server.per_request,
        "counters": server.counters,
        "max_model_len": server.max_model_len,
        "local_pair": local_pair_for(server.model, pairs) if server.method == methods.DRAFT else None,  # the roofline's
        "local_engine": local_engine_for(server.model, server.method, pairs),  # the two engines' comparison
        "asked": asked,  # shown while the URL field still says this
    }


def capped_rows(pair: ModelPair, rows: list[PromptRow], limits: Limits) -> tuple[list[PromptRow], list[str]]:
    """The rows whose prompt, as the model reads it (in an instruct pair's chat template, as run_here sends it), fits
    public mode's prompt-token cap, and "line N: why" for the others; a workload none of whose prompts fits is
    refused before any run."""
    if not limits.public:
        return list(rows), []
    from specviz.engine.decode import encode_prompt

    fits, problems = [], []
    for row, read in zip(rows, wrapped_rows(pair, rows, uses_chat(pair.target_name)), strict=True):
        try:
            limits.check_prompt_tokens(len(encode_prompt(pair, read.prompt)))
            fits.append(row)
        except SpecvizError as exc:
            problems.append(f"{row.where}: {exc}")
    if not fits:
        raise SettingsError(f"No prompt of this workload fits ({len(problems)} over the cap); the first: {problems[0]}")
    return fits, problems


def run_here(
    pair: ModelPair, rows: list[PromptRow], method_names: list[str], ks: list[int], base: RunSettings, repeats: int
) -> None:
    """Measure the step costs, then every prompt x method x K (each `repeats` times, with its plain runs)."""
    clear_results(planned=len(rows) * len(method_names) * len(ks))  # results; each timed `repeats` times
    rows = wrapped_rows(pair, rows, uses_chat(pair.target_name))  # an instruct pair's: in its chat template
    start_measurement(rows, method_names, ks, base, repeats)
    bar, progress = progress_bar(repeats)
    bar.progress(0.0, text="Measuring step costs…")
    costs = step_costs(pair, ks, base, method_names)  # each head and early exit it runs too: their c
    st.session_state[SETTINGS] = (base, pair.describe(), method_names, sorted(ks), costs)
    st.session_state[ENVIRONMENT] = environment(pair)  # where the speedups are timed: for the bench comparison
    bar.progress(0.0, text="Warming up…")
    for record in run_workload(
        engine_source(pair, session_memory()), rows, method_names, sorted(ks), base, progress, repeats
    ):
        st.session_state[RECORDS].append(record)  # kept even if the run is stopped here
    bar.empty()


def start_measurement(rows: Sequence[PromptRow], method_names, ks, base: RunSettings, repeats: int) -> None:
    """Name the measurement about to run: what it measures (prompts, methods, K, settings, repeats), when it started
    and the machine's load then, so a later measurement of the same can be compared with it (earlier_figures)."""
    key = repr((tuple((r.prompt, r.tag) for r in rows), tuple(method_names), tuple(sorted(ks)), base, repeats))
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    st.session_state[MEASUREMENT] = {"id": time.time_ns(), "key": key, "when": time.time(), "load": load}


def compared_with_earlier(summary: list[dict], names: dict, complete: bool = True) -> list[tuple[bool, str]]:
    """This measurement's figures kept for later, and compared with the latest earlier measurement of the same
    prompts and settings in this session (measure/summary.py compare_measurements); [] when there is none, or when
    this one was stopped early (`complete` False: its figures are over fewer prompts than the key names)."""
    state = st.session_state
    current = state.get(MEASUREMENT)
    if not current or not complete:
        return []
    history = state.setdefault(HISTORY, {})
    history[current["id"]] = {**current, "figures": measurement_figures(summary)}
    same = [h for i, h in history.items() if i != current["id"] and h["key"] == current["key"] and h["figures"]]
    if not same:
        return []
    return compare_measurements(max(same, key=lambda h: h["when"]), history[current["id"]], names)


def run_on_server(
    open_it: Callable[[], Server],
    rows: list[PromptRow],
    note: str | None,
    base: RunSettings,
    concurrency: int,
    limits: Limits,
) -> None:
    """Every prompt through the server (its own method and K, the sidebar's sampling and length); a failure is
    shown, and the prompts finished before it are kept."""
    state = st.session_state
    clear_results()
    state.pop(ENVIRONMENT, None)  # a server's speeds are timed there, not here
    state.pop(MEASUREMENT, None)  # no speedup measured there: nothing to compare with a later measurement
    try:
        server = open_it()
        if note:
            st.warning(literal(note))
        meta = {**server.describe(), "model": display_source(server.model, limits), "concurrency": concurrency}
        state[PLANNED] = len(rows)
        state[SETTINGS] = (server.settings(base), meta, [server.method], [server.k], None)
        bar, progress = progress_bar(served=True)
        for record in measure(server, rows, base, concurrency, progress):
            state[RECORDS].append(record)  # kept if the run is stopped, or the server fails, here
        bar.empty()
    except SpecvizError as exc:
        kept = len(state[RECORDS])
        if kept:
            state[STOPPED] = f"The server failed after {kept} prompt(s); they are kept below. {exc}"
        kept_note = f"\n\nThe {kept} prompt(s) finished before are kept below." if kept else ""
        st.error(literal(str(exc)) + kept_note)  # a server's own words may be in it: shown as text


def compare_with_server(server: Server, target: str, draft: str | None, base: RunSettings, rows: list) -> list[dict]:
    """Each prompt on the server and on this app's engine (float32 on the CPU), greedy, the server's method and K:
    agreement per prompt and per step, as the page's table rows (viz/workload_charts.py agreement_row). draft: None
    for a feature head, which the pair finds beside its target."""
    pair = cached_pair(target, draft, "cpu", "float32")
    pair.load_head_for(server.method)  # a head that does not fit this target: refused now, before any request
    greedy = replace(  # the whole draft, as vLLM runs it: a trimmed vocabulary would compare unlike drafts
        base, sampling=SamplingSettings(0.0, 0, 1.0), stop_at_eos=False, draft_vocab=0
    )
    settings = server.settings(greedy)
    bar = st.progress(0.0, text="Warming up both engines…")
    on_prompt = lambda i, row: bar.progress(
        i / len(rows), text=f"{i}/{len(rows)} prompts · {user_message(row.prompt)[:60]!r}"
    )  # noqa: E731
    misses = ngram_misses(pair, settings) if settings.method == methods.NGRAM else None  # places n-gram misses
    source = engine_source(pair, remembered(pair, settings))  # suffix: the server's tree holds its probe first
    runs = compare_engines(source, server.run, rows, settings, on_prompt, misses)
    out = [agreement_row(run) for run in runs]
    bar.empty()
    return out


def settings_changed(measured: RunSettings, now: RunSettings | None) -> str:
    """How the sidebar's settings differ from those the results on screen were measured with ("" when they do not,
    or when the sidebar holds none): results from earlier settings are never shown as if they were current."""
    if now is None:
        return ""
    pairs = [
        ("temperature", measured.sampling.temperature, now.sampling.temperature),
        ("top-k", measured.sampling.top_k, now.sampling.top_k),
        ("top-p", measured.sampling.top_p, now.sampling.top_p),
        ("seed", measured.seed, now.seed),
        ("max new tokens", measured.max_new_tokens, now.max_new_tokens),
        ("draft vocabulary", measured.draft_vocab, now.draft_vocab),
    ]
    return ", ".join(
        f"{name} {then:g} (the sidebar now says {current:g})" for name, then, current in pairs if then != current
    )


def run_load_sweep(
    urls: Sequence[str],
    baseline_url: str,
    model: str,
    api_key: str,
    declared: str,
    rows: list[PromptRow],
    base: RunSettings,
    levels: Sequence[int],
    rounds: int,
    limits: Limits,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> None:
    """The load sweep from the page: every speculative server against the plain one at each level, each request
    given `timeout_s`. The document after each finished level goes into the session, so Stop or a failing server
    keeps what finished; a fault (a server overloaded, too slow, gone) is shown with the levels finished before it."""
    state = st.session_state
    state.pop(LOAD, None)
    try:
        wrong = [n for n in levels if n > limits.max_concurrency]
        if wrong:
            raise SettingsError(
                f"This deployment keeps at most {limits.max_concurrency} requests in flight; {wrong[0]} asks more."
            )
        servers = [open_server(url, model, api_key, declared, limits, timeout_s) for url in urls]
        limits.check_server(baseline_url)
        baseline = connect_plain(baseline_url.strip(), model.strip() or servers[0].model, api_key or None, timeout_s)
    except SpecvizError as exc:
        st.error(literal(str(exc)))  # a server's own words may be in it: shown as text
        return
    bar = st.progress(0.0, text="Warming up…")
    steps = len(levels) * (len(servers) + 1) * rounds
    done = [0]

    def on_level(url: str, level: int) -> None:
        bar.progress(min(done[0] / steps, 1.0), text=f"concurrency {level}: {url}")
        done[0] += 1

    for doc in sweep_documents(servers, baseline, rows, base, levels, rounds, on_level):
        state[LOAD] = shown_document(doc, limits)  # kept if the sweep is stopped, or a server fails, here
    bar.empty()
    failure = state[LOAD]["failure"]
    if failure:
        st.error(literal(failure_words(failure)))


def shown_document(doc: dict, limits: Limits) -> dict:
    """The document with every model named as this deployment may show it (public mode: no local path)."""
    named = lambda who: {**who, "model": display_source(who["model"], limits)}  # noqa: E731
    return {**doc, "baseline": named(doc["baseline"]), "servers": [named(s) for s in doc["servers"]]}
