"""Your workload: measure acceptance and speedup on your own prompts, per prompt, per position and per tag."""

import json

import streamlit as st

from specviz import methods
from specviz.engine.costs import measure_costs
from specviz.engine.decode import encode_prompt
from specviz.engine.models import ASSETS
from specviz.errors import SpecvizError
from specviz.measure.lanes import run_method
from specviz.measure.predict import predict
from specviz.measure.prompts import Workload, parse_workload
from specviz.measure.recommend import recommend
from specviz.measure.summary import results_csv, results_json, summarize
from specviz.measure.workload import run_workload
from specviz.ui.controls import active_pair, sidebar_controls
from specviz.ui.limits import Limits
from specviz.ui.render import apply_lecture_mode, page_header
from specviz.viz import workload_charts as charts
from specviz.viz.explain import ALPHA_HELP

page_header(
    "Your workload",
    "Teaching point: acceptance depends on the text: measure it on your own prompts, per position and per kind of "
    "token, and trust the measured speedup next to the theory before deploying speculation.",
)
controls = sidebar_controls()
apply_lecture_mode(controls.lecture)
state = st.session_state
SAMPLES = {path.stem: path for path in sorted((ASSETS / "workloads").glob("*.jsonl"))}
LIMITS = Limits.from_env()
MAX_PROMPTS_PER_RUN = LIMITS.max_prompts

source = st.radio("Prompts from", ["a sample workload", "pasted text", "an uploaded file"], horizontal=True)
workload: Workload | None = None
try:
    if source == "a sample workload":
        chosen = st.multiselect("Sample workloads (assets/workloads)", list(SAMPLES), default=["code"])
        parts = [parse_workload(SAMPLES[name].read_bytes(), SAMPLES[name].name) for name in chosen]
        workload = Workload(tuple(r for p in parts for r in p.rows), ()) if parts else None
    elif source == "pasted text":
        text = st.text_area(
            "One prompt per block: separate prompts by a line holding only --- (or, if there is none, by blank lines).",
            height=180,
        )
        workload = parse_workload(text, "pasted.txt", LIMITS.max_upload_bytes) if text.strip() else None
    else:
        upload = st.file_uploader(
            '.txt (blocks), .jsonl ({"prompt", "tag"} per line) or .csv (prompt[,tag] columns)',
            type=["txt", "jsonl", "csv"],
        )
        workload = parse_workload(upload.getvalue(), upload.name, LIMITS.max_upload_bytes) if upload else None
except SpecvizError as exc:
    st.error(str(exc))
if workload and workload.problems:
    st.warning("Skipped rows (the others still run):\n\n" + "\n".join(f"- {p}" for p in workload.problems))

left, middle, right = st.columns(3)
chosen_methods = left.multiselect("Methods", list(methods.PROPOSERS), default=["draft"], format_func=methods.label)
ks = middle.multiselect("K values", list(range(1, 17)), default=[controls.settings.k if controls.settings else 4])
repeats = right.number_input(
    "Timing repeats per prompt",
    1,
    5,
    value=2,
    help="Each prompt is timed this many times "
    "(plain and every method): the go / no-go interval then carries the clock noise too.",
)
st.caption(
    "Every run generates exactly the sidebar's max new tokens (EOS is ignored, as vLLM's and Spec-Bench's "
    "benchmarks do), so every speed is timed over the same length."
)
state.setdefault("workload_records", [])


def runnable_rows(workload: Workload):
    """Rows that fit the model's context; the others are reported by line number."""
    pair = active_pair()
    rows, problems = [], []
    for row in workload.rows[:MAX_PROMPTS_PER_RUN]:
        try:
            ids = encode_prompt(pair, row.prompt)
            if pair.context_length and len(ids) + controls.settings.max_new_tokens > pair.context_length:
                raise SpecvizError(
                    f"{len(ids)} prompt tokens + {controls.settings.max_new_tokens} new tokens exceed the context "
                    f"of {pair.context_length}"
                )
            rows.append(row)
        except SpecvizError as exc:
            problems.append(f"line {row.line}: {exc}")
    if len(workload.rows) > MAX_PROMPTS_PER_RUN:
        problems.append(f"only the first {MAX_PROMPTS_PER_RUN} of {len(workload.rows)} prompts run at once")
    return pair, rows, problems


run_col, stop_col, clear_col = st.columns(3)
start = run_col.button(
    "▶ Measure", type="primary", key="measure", disabled=not (workload and chosen_methods and ks and controls.settings)
)
stop_col.button("■ Stop (keeps what was measured)")
if clear_col.button("Clear results"):
    state["workload_records"] = []

if start:
    try:
        pair, rows, problems = runnable_rows(workload)
        for problem in problems:
            st.warning(problem)
        base = controls.settings
        state["workload_records"] = []
        state["workload_planned"] = len(rows) * len(chosen_methods) * len(ks)  # results; each timed `repeats` times
        bar = st.progress(0.0, text="Measuring step costs…")
        costs = measure_costs(pair, k_max=max(ks), repeats=5)
        state["workload_settings"] = (base, pair.describe(), chosen_methods, sorted(ks), costs)
        bar.progress(0.0, text="Warming up…")

        def progress(p) -> None:
            eta = "" if p.done == 0 else f" · about {p.eta_s:.0f} s left"
            bar.progress(p.done / max(1, p.total), text=f"{p.done}/{p.total} runs{eta} · {p.prompt[:60]!r}")

        run = lambda prompt, settings, tag: run_method(pair, prompt, settings, settings.method, tag=tag)  # noqa: E731
        for record in run_workload(run, rows, chosen_methods, sorted(ks), base, progress, int(repeats)):
            state["workload_records"].append(record)  # kept even if the run is stopped here
        bar.empty()
    except SpecvizError as exc:
        st.error(str(exc))

records = state["workload_records"]
if not records:
    st.stop()

base, meta, run_methods, run_ks, costs = state["workload_settings"]
planned = state.get("workload_planned", len(records))
st.caption(
    f"{len(records)} of {planned} runs measured"
    + ("" if len(records) == planned else " (stopped early: the finished runs are kept)")
)
summary = summarize(records, costs, base.seed)
st.subheader("Recommendation")
advice = recommend(records, meta.get("draft"), base.sampling.temperature, costs)
if advice.go is None:
    st.info("No verdict yet. " + advice.reason)
else:
    (st.success if advice.go else st.warning)(("GO: " if advice.go else "NO-GO: ") + advice.reason)
if costs.implausible:
    st.warning(f"No predicted speedup is shown: {costs.implausible}")
left, right = st.columns(2)
left.markdown("vLLM `--speculative-config`")
left.code(json.dumps(advice.vllm_config), language="json")
right.markdown("Hugging Face `generate()`")
right.code(advice.hf_generate, language="python")

st.subheader("Per tag and overall")
st.dataframe(charts.summary_frame(summary), hide_index=True)
st.caption(ALPHA_HELP)
st.subheader("Per prompt")
st.dataframe(charts.per_prompt_frame(records), hide_index=True)
left, right = st.columns(2)
left.altair_chart(charts.per_position_chart(records), width="stretch")
right.altair_chart(charts.acceptance_length_chart(records), width="stretch")
left, right = st.columns(2)
left.altair_chart(charts.class_chart(records), width="stretch")
predictions = {label: predict([r.run for r in group], costs) for label, group in charts.setting_groups(records).items()}
right.altair_chart(charts.speedup_chart(records, predictions), width="stretch")
st.caption(
    "Predicted speedup = τ / (drafts per round · c + v): this run's measured tokens per target pass τ, the draft's "
    "cost per step c and the verify pass cost v, both timed on this machine before the workload and relative to a "
    "plain target step. It is what the model passes alone allow; the measured bar also pays the loop's own overhead. "
    "On a CPU with small models c and v are large, so measured gains are small."
)
st.subheader("Token heatmap")
which = st.selectbox(
    "Run",
    range(len(records)),
    format_func=lambda i: f"{records[i].method} K={records[i].k} · {records[i].prompt[:50]!r}",
)
st.markdown(charts.heatmap_html(records[which]), unsafe_allow_html=True)

left, right = st.columns(2)
left.download_button(
    "Download CSV (one row per prompt × method × K)", results_csv(records), "specviz-workload.csv", "text/csv"
)
right.download_button(
    "Download JSON (everything, with vLLM-shaped metrics)",
    results_json(records, base, {"methods": run_methods, "ks": run_ks, **meta}, costs, base.seed),
    "specviz-workload.json",
    "application/json",
)
