"""The workload page's input sections, drawn: where the prompts come from, where they run (this app's models with
the methods and K, or a vLLM server, checked), the Measure buttons and the two-engine comparison (pages/workload.py
puts them in order; the decisions are in measure/workload_policy.py, the prose in assets/lessons/workload.json)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace

import streamlit as st

from specviz import methods
from specviz.core.settings import RunSettings
from specviz.engine.loading.models import ASSETS, BUNDLED_DRAFT, BUNDLED_TARGET
from specviz.errors import SpecvizError
from specviz.measure import workload_policy as policy
from specviz.measure.prompts import TAG_LINE, Workload, parse_workload, tags_found
from specviz.measure.recommend import RULE_BEFORE_A_RUN
from specviz.measure.workload import runnable_rows
from specviz.remote.vllm import Server
from specviz.ui import render, spec_bench
from specviz.ui import workload as drive
from specviz.ui.concurrency_view import concurrency_section
from specviz.ui.controls import Controls, active_pair, active_sources, pair_methods
from specviz.ui.limits import Limits, display_source
from specviz.viz import workload_charts as charts
from specviz.viz.text import literal, user_message

LESSON = json.loads((ASSETS / "lessons" / "workload.json").read_text(encoding="utf-8"))
SAMPLES = {path.stem: path for path in sorted((ASSETS / "workloads").glob("*.jsonl"))}
HERE, SERVER = "this app's models", "a vLLM server"
SOURCES = ["a sample workload", "pasted text", "an uploaded file"]


@dataclass(frozen=True)
class Plan:
    """What a Measure runs: where, the methods, the K values and repeats; for a server, how to reach it and what its
    check found (None before one)."""

    where: str
    methods: list[str]
    ks: list[int]
    repeats: int = 1
    url: str = ""
    served_model: str = ""
    api_key: str = ""
    declared: str = ""
    concurrency: int = 1
    found: dict | None = field(default=None)

    def open_server(self, limits: Limits) -> Server:
        """A connection to the planned server, with its key and declared method."""
        return drive.open_server(self.url, self.served_model, self.api_key, self.declared, limits)

    def found_here(self) -> dict | None:
        """The server check's findings when they are for the URL now in the box, else None."""
        return self.found if self.found and self.found["asked"] == self.url.strip() else None


def show_workload_source(controls: Controls, limits: Limits) -> Workload | None:
    """The prompts: a sample workload, pasted text or an uploaded file, with the skipped rows and the tags found."""
    source = st.radio("Prompts from", SOURCES, horizontal=True)
    workload: Workload | None = None
    try:
        if source == SOURCES[0]:
            chosen = st.multiselect(
                "Sample workloads (assets/workloads)",
                list(SAMPLES),
                default=["code"],
                format_func=spec_bench.sample_label,
            )
            parts = [parse_workload(SAMPLES[name].read_bytes(), SAMPLES[name].name) for name in chosen]
            workload = Workload(tuple(r for p in parts for r in p.rows), ()) if parts else None
            workload = spec_bench.sample_controls(workload, controls.settings.seed if controls.settings else 0)
        elif source == SOURCES[1]:
            text = st.text_area(
                LESSON["pasted_label"].format(tag_line=TAG_LINE),
                height=180,
                placeholder=LESSON["pasted_placeholder"],
                help=LESSON["pasted_help"],
            )
            workload = parse_workload(text, "pasted.txt", limits.max_upload_bytes) if text.strip() else None
        else:
            upload = st.file_uploader(LESSON["upload_label"].format(tag_line=TAG_LINE), type=["txt", "jsonl", "csv"])
            workload = parse_workload(upload.getvalue(), upload.name, limits.max_upload_bytes) if upload else None
    except SpecvizError as exc:
        st.error(literal(str(exc)))
    if workload and workload.problems:
        st.warning("Skipped rows (the others still run):\n\n" + "\n".join(f"- {literal(p)}" for p in workload.problems))
    if workload and workload.rows:
        st.caption(literal(tags_found(workload.rows)))
    return workload


def show_run_limit(workload: Workload | None, cap: int) -> int:
    """How many of the workload's prompts a run takes (the first N), with a note when there are more than the cap."""
    if not (workload and workload.rows):
        return cap
    most = min(cap, len(workload.rows))
    limit = int(st.number_input(f"Prompts to run (the first N of {len(workload.rows)})", 1, most, value=most))
    note = drive.too_many_note(len(workload.rows), cap)
    if note:
        st.caption(note.capitalize() + ".")
    return limit


def show_plan(controls: Controls, limits: Limits) -> Plan:
    """Where to run, then that place's choices: this app's methods, K and repeats, or a server and its check."""
    where = st.radio("Where to run", [HERE, SERVER], horizontal=True, key="where", help=LESSON["where_help"])
    return show_here(controls, limits) if where == HERE else show_server(limits)


def show_here(controls: Controls, limits: Limits) -> Plan:
    """This app's models: the methods (or the whole family), the K values and the timing repeats."""
    left, middle, right = st.columns([2, 1, 1])  # the methods' chips carry the registry's labels: the widest
    whole = left.checkbox("The whole family", key="whole_family", help=LESSON["whole_family_help"])
    if whole:
        chosen_methods, left_out = drive.whole_family(controls.settings, *active_sources()[:2])
        left.caption("Measures " + ", ".join(methods.label(name) for name in chosen_methods) + ".")
        for line in left_out:
            left.caption(f"Left out {literal(line)}.")
    else:
        offered_methods = pair_methods(methods.PROPOSERS)  # as the sidebar offers them
        chosen_methods = left.multiselect(
            "Methods", offered_methods, default=[methods.first_choice(offered_methods)], format_func=methods.label
        )
    offered = list(range(1, limits.max_k + 1))  # public mode's K cap holds here too
    ks = middle.multiselect(
        "K values", offered, default=[min(controls.settings.k if controls.settings else 4, offered[-1])]
    )
    repeats = right.number_input("Timing repeats per prompt", 1, 5, value=2, help=LESSON["repeats_help"])
    return Plan(HERE, list(chosen_methods), list(ks), int(repeats))


def show_server(limits: Limits) -> Plan:
    """A vLLM server: its URL, model, key, declared method and concurrency, and a connection check."""
    left, middle, right = st.columns([3, 2, 2])
    url = left.text_input(
        "Server URL", value=limits.servers[0] if limits.servers else "http://127.0.0.1:8000", key="server_url"
    )
    served_model = middle.text_input("Model (optional)", key="server_model", help="Needed when it serves several.")
    api_key = right.text_input("API key (optional)", type="password", help="Sent only in the request headers.")
    left, right = st.columns(2)
    declared = left.selectbox(
        "Its speculative method, if it does not say",
        list(methods.FROM_VLLM.values()),
        format_func=methods.label,
        key="server_method",
        help=LESSON["server_method_help"],
    )
    concurrency = right.number_input(
        "Requests in flight",
        1,
        min(8, limits.max_concurrency),
        value=1,
        key="server_concurrency",
        help="Above 1 needs per-request metrics.",
    )
    plan = Plan(SERVER, [declared], [0], 1, url, served_model, api_key, declared, int(concurrency))
    state = st.session_state
    if st.button("Check connection", key="check_server"):
        state.pop("server_found", None)
        try:
            pairs = (active_sources()[:2], (BUNDLED_TARGET, BUNDLED_DRAFT))  # the pair in use, then the bundled one
            state["server_found"] = drive.server_summary(plan.open_server(limits), limits, url.strip(), pairs)
        except SpecvizError as exc:
            st.error(literal(str(exc)))  # a server's own words may be in it: shown as text
    plan = replace(plan, found=state.get("server_found"))
    found = plan.found_here()
    if found:
        st.success(policy.server_found_words(found))
    return plan


def show_measure(workload: Workload | None, settings: RunSettings | None, plan: Plan, run_limit: int, limits: Limits):
    """The length caption, the Measure / Stop / Clear buttons, and a run started here or on the server."""
    st.caption(LESSON["same_length"] + (LESSON["server_decodes"] if plan.where == SERVER else ""))
    if plan.where == HERE:
        st.caption(RULE_BEFORE_A_RUN)  # the rule and the minimum before a run, from the constants the verdict uses
    st.session_state.setdefault("workload_records", [])
    run_col, stop_col, clear_col = st.columns(3)
    ready = workload and settings and (plan.methods and plan.ks if plan.where == HERE else plan.url.strip())
    start = run_col.button("▶ Measure", type="primary", key="measure", disabled=not ready)
    stop_col.button("■ Stop (keeps what was measured)")
    if clear_col.button("Clear results"):
        drive.clear_results()
    if not (start and workload and settings):  # the button is enabled only with both
        return
    too_many = drive.too_many_note(len(workload.rows), limits.max_prompts)
    if plan.where == HERE:
        try:
            pair = active_pair()
            rows, problems = runnable_rows(pair, workload.rows[:run_limit], [settings])  # before clearing
            rows, over = drive.capped_rows(pair, rows, limits)  # public mode's prompt-token cap
            problems += over
            for problem in problems + ([too_many] if too_many else []):
                st.warning(literal(problem))
            drive.run_here(pair, rows, plan.methods, plan.ks, settings, plan.repeats)
        except SpecvizError as exc:
            st.error(literal(str(exc)))
    else:
        rows = list(workload.rows[:run_limit])
        drive.run_on_server(lambda: plan.open_server(limits), rows, too_many, settings, plan.concurrency, limits)


def show_two_engines(workload: Workload | None, settings: RunSettings | None, plan: Plan, limits: Limits) -> None:
    """Same pair, two engines: this app's engine against the server's on the same prompts, greedily."""
    found = plan.found_here()
    if plan.where != SERVER or not (found and found.get("local_engine")):
        return
    state = st.session_state
    st.subheader("Same pair, two engines")
    target, draft = found["local_engine"]
    drafter = policy.drafter_words(display_source(draft, limits) if draft else None, found["method"])
    st.caption(
        LESSON["engines_caption"].format(
            target=literal(repr(display_source(target, limits))),
            drafter=drafter,
            method=methods.label(found["method"]),
            k=found["k"],
        )
    )
    most, default = policy.compare_count(len(workload.rows) if workload else 0, limits.max_prompts)
    n_compare = st.number_input("Prompts to compare", 1, most, value=default)
    if st.button("Compare with this app's engine", disabled=not (workload and settings)) and workload and settings:
        state.pop("agreement", None)
        try:
            rows = list(workload.rows[: int(n_compare)])
            state["agreement"] = drive.compare_with_server(plan.open_server(limits), target, draft, settings, rows)
        except SpecvizError as exc:
            st.error(literal(str(exc)))
    compared = state.get("agreement")
    if compared:
        agreed, sentence = charts.agreement_verdict(compared)
        (st.success if agreed else st.warning)(sentence)
        st.caption(LESSON["engines_differ"])
        render.show_table(st, charts.agreement_frame(compared))
        pick = st.selectbox(
            "Steps of prompt", range(len(compared)), format_func=lambda i: user_message(compared[i]["prompt"])[:60]
        )
        render.show_table(st, charts.agreement_steps_frame(compared[pick]))


def show_under_load(workload: Workload | None, settings: RunSettings | None, plan: Plan, run_limit: int, limits):
    """The vLLM mode's load view, below whatever the one-server measurement shows."""
    if plan.where == SERVER:
        rows = list(workload.rows[:run_limit]) if workload else []
        served = (plan.url, plan.served_model, plan.api_key, plan.declared, plan.found)
        concurrency_section(rows, settings, *served, limits)
