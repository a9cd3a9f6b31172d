"""Your workload: measure acceptance and speedup on your own prompts, per prompt, per position and per tag."""

import json

import streamlit as st

from specviz import methods
from specviz.engine.models import ASSETS, BUNDLED_DRAFT, BUNDLED_TARGET
from specviz.errors import SpecvizError
from specviz.measure.bench import recorded_benches
from specviz.measure.predict import below_measured, predict
from specviz.measure.prompts import TAG_LINE, Workload, parse_workload, tags_found
from specviz.measure.ranking import best_lines, ranking
from specviz.measure.recommend import MIN_PROMPTS, RULE_BEFORE_A_RUN, judge, verdict_document
from specviz.measure.summary import ALL, INTERVAL_COVERS, results_csv, results_json, summarize
from specviz.measure.timing import DISAGREES, against_bench, agreement_words, timing_words, workload_interval_kind
from specviz.measure.workload import runnable_rows
from specviz.ui import render, spec_bench
from specviz.ui import workload as drive
from specviz.ui.controls import active_pair, active_sources, pair_drafts, sidebar_controls
from specviz.ui.limits import Limits, display_source, shown_meta
from specviz.ui.load_view import load_section
from specviz.ui.render import apply_lecture_mode, draw, page_header
from specviz.viz import workload_charts as charts
from specviz.viz.explain import ALPHA_HELP
from specviz.viz.text import literal

page_header(
    "Your workload",
    "Teaching point: acceptance depends on the text: measure it on your own prompts, per position and per kind of "
    "token, and trust the measured speedup next to the theory before deploying speculation.",
)
controls = sidebar_controls("workload")
apply_lecture_mode(controls.lecture)
render.show_html(charts.CHIPS_WRAP_CSS)  # every chosen method's chip in sight: Streamlit scrolls them on one line
state = st.session_state
SAMPLES = {path.stem: path for path in sorted((ASSETS / "workloads").glob("*.jsonl"))}
LIMITS = Limits.from_env()
MAX_PROMPTS_PER_RUN = LIMITS.max_prompts
HERE, SERVER = "this app's models", "a vLLM server"

source = st.radio("Prompts from", ["a sample workload", "pasted text", "an uploaded file"], horizontal=True)
workload: Workload | None = None
try:
    if source == "a sample workload":
        chosen = st.multiselect(
            "Sample workloads (assets/workloads)", list(SAMPLES), default=["code"], format_func=spec_bench.sample_label
        )
        parts = [parse_workload(SAMPLES[name].read_bytes(), SAMPLES[name].name) for name in chosen]
        workload = Workload(tuple(r for p in parts for r in p.rows), ()) if parts else None
        workload = spec_bench.sample_controls(workload, controls.settings.seed if controls.settings else 0)
    elif source == "pasted text":
        text = st.text_area(
            "One prompt per block: separate prompts by a line holding only --- (or, if there is none, by blank "
            f"lines); a line `{TAG_LINE}` tags the prompts after it.",
            height=180,
            placeholder="### tag: code\ndef add(a, b):\n---\nclass Counter:\n### tag: prose\nThe quick brown fox",
            help="Each tag is measured and judged on its own as well as with all prompts. A tag line tags every "
            "prompt after it until the next one; prompts before the first are untagged.",
        )
        workload = parse_workload(text, "pasted.txt", LIMITS.max_upload_bytes) if text.strip() else None
    else:
        upload = st.file_uploader(
            f'`.txt` (blocks, tagged by `{TAG_LINE}` lines), `.jsonl` (`{{"prompt", "tag"}}` per line) or '
            "`.csv` (prompt[,tag] columns)",
            type=["txt", "jsonl", "csv"],
        )
        workload = parse_workload(upload.getvalue(), upload.name, LIMITS.max_upload_bytes) if upload else None
except SpecvizError as exc:
    st.error(literal(str(exc)))
if workload and workload.problems:
    st.warning("Skipped rows (the others still run):\n\n" + "\n".join(f"- {literal(p)}" for p in workload.problems))
if workload and workload.rows:
    st.caption(literal(tags_found(workload.rows)))

run_limit = MAX_PROMPTS_PER_RUN
if workload and workload.rows:
    cap = min(MAX_PROMPTS_PER_RUN, len(workload.rows))
    run_limit = int(st.number_input(f"Prompts to run (the first N of {len(workload.rows)})", 1, cap, value=cap))
    if len(workload.rows) > MAX_PROMPTS_PER_RUN:
        st.caption(drive.too_many_note(len(workload.rows), MAX_PROMPTS_PER_RUN).capitalize() + ".")

where = st.radio(
    "Where to run",
    [HERE, SERVER],
    horizontal=True,
    key="where",
    help="This app's models decode in this process (with a plain baseline, so speedups are measured); a vLLM server "
    "decodes with the method and K it was started with, and specviz reads its speculative-decoding metrics.",
)
if where == HERE:
    left, middle, right = st.columns([2, 1, 1])  # the methods' chips carry the registry's labels: the widest
    whole = left.checkbox(
        "The whole family",
        key="whole_family",
        help="Every method this pair can run: the draft model, n-gram lookup, suffix decoding, the feature heads found "
        "beside the target (EAGLE-1, EAGLE-3, Medusa) and early exit at the sidebar's E; ranked by measured speedup "
        "per tag below.",
    )
    if whole:
        chosen_methods, left_out = drive.whole_family(controls.settings, *active_sources()[:2])
        left.caption("Measures " + ", ".join(methods.label(name) for name in chosen_methods) + ".")
        for line in left_out:
            left.caption(f"Left out {literal(line)}.")
    else:
        offered_methods = methods.runnable_with(methods.PROPOSERS, *pair_drafts(active_sources()))
        chosen_methods = left.multiselect(
            "Methods", offered_methods, default=[methods.first_choice(offered_methods)], format_func=methods.label
        )
    offered = list(range(1, LIMITS.max_k + 1))  # public mode's K cap holds here too
    ks = middle.multiselect(
        "K values", offered, default=[min(controls.settings.k if controls.settings else 4, offered[-1])]
    )
    repeats = right.number_input(
        "Timing repeats per prompt",
        1,
        5,
        value=2,
        help="Each prompt is timed this many times "
        "(plain and every method): the go / no-go interval then carries the clock noise too.",
    )
else:
    left, middle, right = st.columns([3, 2, 2])
    url = left.text_input(
        "Server URL", value=LIMITS.servers[0] if LIMITS.servers else "http://127.0.0.1:8000", key="server_url"
    )
    served_model = middle.text_input("Model (optional)", key="server_model", help="Needed when it serves several.")
    api_key = right.text_input("API key (optional)", type="password", help="Sent only in the request headers.")
    left, right = st.columns(2)
    declared = left.selectbox(
        "Its speculative method, if it does not say",
        list(methods.FROM_VLLM.values()),
        format_func=methods.label,
        key="server_method",
        help="vLLM exposes its --speculative-config only in dev mode (VLLM_SERVER_DEV_MODE=1); otherwise the "
        "method is the one declared here, checked against what its steps look like. K is read from its metrics.",
    )
    concurrency = right.number_input(
        "Requests in flight",
        1,
        min(8, LIMITS.max_concurrency),
        value=1,
        key="server_concurrency",
        help="Above 1 needs per-request metrics.",
    )
    chosen_methods, ks, repeats = [declared], [0], 1

    def open_server():
        return drive.open_server(url, served_model, api_key, declared, LIMITS)

    if st.button("Check connection", key="check_server"):
        state.pop("server_found", None)
        try:
            pairs = (active_sources()[:2], (BUNDLED_TARGET, BUNDLED_DRAFT))  # the pair in use, then the bundled one
            state["server_found"] = drive.server_summary(open_server(), LIMITS, url.strip(), pairs)
        except SpecvizError as exc:
            st.error(literal(str(exc)))  # a server's own words may be in it: shown as text
    found = state.get("server_found")
    if found and found["asked"] == url.strip():
        st.success(
            f"**{literal(found['server'])}** serves {', '.join(literal(repr(m)) for m in found['models'])} "
            f"(vLLM {literal(found['vllm_version'] or 'version not reported')}; "
            f"context {literal(found['max_model_len'] or '?')} tokens)"
            f"\n\n- speculative method: **{methods.label(found['method'])}**, K = **{found['k']}**"
            + "".join(f"\n  - {literal(note)}" for note in found["notes"])
            + "\n- per-request metrics: "
            + ("**on** (each step's drafted and accepted counts)" if found["per_request"] else "**off**")
            + "\n- Prometheus counters: "
            + (
                "**yes**" + ("" if found["per_request"] else " (totals per prompt, at concurrency 1 only)")
                if found["counters"]
                else "**none**"
            )
        )
st.caption(
    "Every run generates exactly the sidebar's max new tokens (EOS is ignored, as vLLM's and Spec-Bench's "
    "benchmarks do), so every speed is timed over the same length."
    + (
        " The server decodes with its own method and K, the sidebar's sampling, seed and length."
        if where == SERVER
        else ""
    )
)
if where == HERE:
    st.caption(RULE_BEFORE_A_RUN)  # the rule and the minimum before a run, from the constants the verdict uses
state.setdefault("workload_records", [])


run_col, stop_col, clear_col = st.columns(3)
ready = workload and controls.settings and (chosen_methods and ks if where == HERE else url.strip())
start = run_col.button("▶ Measure", type="primary", key="measure", disabled=not ready)
stop_col.button("■ Stop (keeps what was measured)")
if clear_col.button("Clear results"):
    drive.clear_results()


too_many = drive.too_many_note(len(workload.rows), MAX_PROMPTS_PER_RUN) if workload else None
if start and where == HERE:
    try:
        pair = active_pair()
        rows, problems = runnable_rows(pair, workload.rows[:run_limit], [controls.settings])  # before clearing
        for problem in problems + ([too_many] if too_many else []):
            st.warning(literal(problem))
        drive.run_here(pair, rows, chosen_methods, ks, controls.settings, int(repeats))
    except SpecvizError as exc:
        st.error(literal(str(exc)))

if start and where == SERVER:
    rows = list(workload.rows[:run_limit])
    drive.run_on_server(open_server, rows, too_many, controls.settings, int(concurrency), LIMITS)


if where == SERVER and found and found.get("local_engine") and found["asked"] == url.strip():
    st.subheader("Same pair, two engines")
    target, draft = found["local_engine"]
    drafter = (
        f"the draft {literal(repr(display_source(draft, LIMITS)))}: vLLM does not say which draft it runs"
        if draft
        else f"the {methods.label(found['method'])} beside it: vLLM does not say which head it runs"
    )
    st.caption(
        f"The server serves {literal(repr(display_source(target, LIMITS)))}, which this app can load too (with "
        f"{drafter}; if it runs another, the steps differ). Both decode the same prompts greedily with "
        f"{methods.label(found['method'])}, K = {found['k']} and the sidebar's max new tokens; this app in float32 on "
        "the CPU."
    )
    available = len(workload.rows) if workload else 0
    n_compare = st.number_input(
        "Prompts to compare", 1, max(1, min(MAX_PROMPTS_PER_RUN, available)), value=min(3, max(1, available))
    )
    if st.button("Compare with this app's engine", disabled=not (workload and controls.settings)):
        state.pop("agreement", None)
        try:
            rows = list(workload.rows[: int(n_compare)])
            state["agreement"] = drive.compare_with_server(open_server(), target, draft, controls.settings, rows)
        except SpecvizError as exc:
            st.error(literal(str(exc)))
    compared = state.get("agreement")
    if compared:
        agreed, sentence = charts.agreement_verdict(compared)
        (st.success if agreed else st.warning)(sentence)
        st.caption(
            "Why the first steps differ: vLLM's prefill commits the first token before any draft, so its first verify "
            "step drafts from the prompt + 1 token, while this app's first round drafts straight from the prompt; the "
            "two line up once a step starts at the same token (specviz's rounds before that are listed with no vLLM "
            "step). Any other difference is numerics: this app ran float32; vLLM does not report its precision over "
            "the API, and a server in bfloat16 or float16 (vLLM's default for half-precision checkpoints) can flip a "
            "near-tie, after which texts and steps differ. tokens/s: one run each, on a shared machine (noisy)."
        )
        render.show_table(st, charts.agreement_frame(compared))
        pick = st.selectbox("Steps of prompt", range(len(compared)), format_func=lambda i: compared[i]["prompt"][:60])
        render.show_table(st, charts.agreement_steps_frame(compared[pick]))


def under_load() -> None:
    """The vLLM mode's load view, below whatever the one-server measurement shows."""
    if where == SERVER:
        rows = list(workload.rows[:run_limit]) if workload else []
        load_section(rows, controls.settings, url, served_model, api_key, declared, found, LIMITS)


records = state["workload_records"]
if not records:
    under_load()
    st.stop()

base, meta, run_methods, run_ks, costs = state["workload_settings"]
changed = drive.settings_changed(base, controls.settings)
if changed:
    st.info(f"These results were measured with {changed}: press ▶ Measure to measure with the sidebar's settings.")
served = any(r.source == "vllm" for r in records)
speedup_measured = any(r.speedup is not None for r in records)
planned = state.get("workload_planned", len(records))
st.caption(
    drive.measured_words(len(records), planned, max(len(r.runs) for r in records), served)
    + ("" if len(records) == planned else " (stopped early: the finished ones are kept)")
    + (
        f" through {meta['server']} ({meta['model']}, {methods.label(meta['method'])}, K = {meta['k']})"
        if served
        else ""
    )
    + f" · {'greedy' if base.sampling.temperature == 0 else f'temperature {base.sampling.temperature:g}'}"
    + (f", top-k {base.sampling.top_k}" if base.sampling.top_k else "")
    + (f", top-p {base.sampling.top_p:g}" if base.sampling.top_p < 1 else "")
    + f", seed {base.seed}, {base.max_new_tokens} new tokens per run"
)
if state.get("workload_stopped"):
    st.warning(literal(state["workload_stopped"]))
warned = [r for r in records if r.run.meta.get("warnings")]
if warned:
    st.warning(
        f"{len(warned)} run(s) carry warnings (in the JSON's meta.warnings), e.g.: {warned[0].run.meta['warnings'][0]}"
    )
if served and base.sampling.temperature > 0 and meta.get("method") == methods.DRAFT:
    st.info(
        "At temperature > 0 vLLM's draft model drafts greedily unless told otherwise (its speculative config's "
        '"draft_sample_method" defaults to "greedy"): each draft is the draft model\'s argmax, taken as certain '
        "(q = 1), so the target accepts it with probability p(x) instead of min(1, p/q). The output stays the "
        "target's distribution, but α is lower than with drafts sampled from q, as this app does. Start vLLM with "
        '"draft_sample_method": "probabilistic" in --speculative-config to measure that instead.'
    )
summary = summarize(records, costs, base.seed)
ranked = ranking(records, costs, base.seed, summary)
st.subheader("Recommendation")
# all prompts, then each tag: their figures are the summary table's rows, the same seed's intervals
verdicts = judge(records, meta.get("draft"), base.sampling.temperature, costs, base.seed, summary)
advice, per_tag = verdicts[0], verdicts[1:]
if not speedup_measured:
    st.info(
        "No go / no-go: speedup is not measured through a server. The server decodes only with its speculative "
        "configuration, so there is no plain baseline on the same server and the same load to compare with; specviz "
        "does not guess one. α, τ and tokens/s below are measured. To decide whether speculation pays there, time the "
        "same prompts on the same server started without --speculative-config."
    )
elif advice.go is None:
    st.info("No verdict yet. " + advice.reason[:1].upper() + advice.reason[1:])
else:
    (st.success if advice.go else st.warning)(("GO: " if advice.go else "NO-GO: ") + advice.reason)
for verdict in per_tag if speedup_measured else ():  # each tag judged on its own, by the same rule
    show, word = {True: (st.success, "GO"), False: (st.warning, "NO-GO"), None: (st.info, "No verdict yet")}[verdict.go]
    show(f"{word} for prompts tagged **{literal(verdict.tag)}**: {verdict.reason}")
if speedup_measured:
    repeats_run = max(len(r.speedups) for r in records)
    best = [r for r in records if (r.method, r.k) == (advice.method, advice.k)]
    st.caption(
        f"The speedup of {advice.setting}: "
        + timing_words(
            repeats_run,
            base.sampling.temperature,
            advice.speedup_ci,
            prompts=len(best),
            tokens=base.max_new_tokens,
            interval_kind=workload_interval_kind(repeats_run),
        )
        + " "
        + INTERVAL_COVERS
    )
    env = state.get(drive.ENVIRONMENT)
    if env and advice.method == methods.DRAFT and advice.measured_speedup is not None:
        bench = against_bench(
            advice.measured_speedup,
            advice.speedup_ci,
            env,
            advice.k,
            base.draft_vocab,
            base.sampling.temperature,
            recorded_benches(ASSETS / "bench"),
        )
        (st.warning if bench.verdict == DISAGREES else st.caption)(
            agreement_words(bench) + " (A workload's prompts are its own; the bench ran its held-out prompts.)"
        )
    names = {(r["source"], r["method"], r["k"]): r["setting"] for r in ranked if r["tag"] == ALL}
    for agree, sentence in drive.compared_with_earlier(summary, names, len(records) == planned):
        (st.caption if agree else st.warning)(sentence)
if costs is not None and costs.implausible:
    st.warning(f"No predicted speedup is shown: {costs.implausible}")
deployable = [v for v in verdicts if v.offered]  # only a GO: the JSON's vllm_config and hf_generate say the same
if not served and not advice.offered and speedup_measured:
    why = {
        False: "for a NO-GO: decoding plainly is the recommendation",
        None: f"without a verdict (at least {MIN_PROMPTS} prompts): nothing is shown yet to pay",
    }.get(advice.go, "for this setting: neither vLLM nor Hugging Face has it")
    st.caption(
        f"No deployment settings are offered {why}" + (", except for the tags that pass, below." if deployable else ".")
    )
for verdict in deployable if not served else ():
    if verdict.tag != advice.tag:
        st.markdown(f"For prompts tagged **{literal(verdict.tag)}** ({verdict.setting}):")
    left, right = st.columns(2)
    left.markdown("vLLM `--speculative-config`")
    if verdict.vllm_config is None:
        left.caption("vLLM has no such method.")
    else:
        left.code(json.dumps(verdict.vllm_config), language="json")
    if (method := methods.REGISTRY.get(verdict.method)) and method.vllm_note:
        left.caption(method.vllm_note)
    right.markdown("Hugging Face `generate()`")
    if verdict.hf_generate is None:
        right.caption("transformers' generate() has no such option.")
    else:
        right.code(verdict.hf_generate, language="python")
    if verdict.deploy_note:
        st.warning(verdict.deploy_note)

if len({(r["method"], r["k"]) for r in ranked}) > 1:  # several settings: the family ranked, best first per tag
    st.subheader("The family ranked")
    for line in best_lines(ranked):
        st.markdown("- " + literal(line))
    render.show_table(st, charts.ranking_frame(ranked, speedup_measured))
    st.caption(
        "Per tag and over all prompts, best measured speedup first (★ marks each tag's best): α, τ (tokens per target "
        "pass), c (a draft step relative to a target step, timed on this machine before the workload; 0 for a lookup "
        "on the host) and the mean drafts per round (K for a fixed chain, fewer for suffix decoding and adaptive K "
        "schedules, which size each draft themselves)."
    )
    if speedup_measured:
        draw(st, charts.ranking_chart(ranked, ALL))

spec_bench.results_section(ranked, records)
st.subheader("Per tag and overall")
render.show_table(st, charts.summary_frame(summary, speedup_measured))
st.caption(ALPHA_HELP)
st.subheader("Per prompt")
render.show_table(st, charts.per_prompt_frame(records, speedup_measured))
left, right = st.columns(2)
draw(left, charts.per_position_chart(records))
draw(right, charts.acceptance_length_chart(records))
strip = charts.step_strip_frame(records)
if len(strip):
    draw(st, charts.step_strip_chart(records))
    if served:
        st.caption(
            "vLLM's first target pass (the prefill) commits one token without drafting, so each strip starts at "
            "pass 2; passes without drafts have no cell."
        )
else:
    st.caption("No per-step counts: the server reported totals only (start it with --per-request-spec-decode-metrics).")
left, right = st.columns(2)
if any(r.by_class for r in records):
    draw(left, charts.class_chart(records))
if speedup_measured:
    predictions = {
        label: predict([r.run for r in group], costs) for label, group in charts.setting_groups(records).items()
    }
    draw(right, charts.speedup_chart(records, predictions))
    st.caption(
        "The black bars on the measured speedups are the 95% interval the verdict quotes. "
        "Predicted speedup = τ / (drafts per round · c + v): this run's measured tokens per target pass τ, the draft's "
        "cost per step c and the verify pass cost v (averaged over the rounds: a round that drafted nothing is a "
        "plain step), both timed on this machine before the workload and relative to a plain target step. It counts "
        "the model passes alone: where the loop's own work is small next to them it bounds the measured bar from "
        "above. On a CPU with small models c and v are large, so measured gains are small."
    )
    if costs is not None and costs.verify_noise:
        st.caption(costs.verify_noise)
    measured_by = {
        label: sum(r.speedup for r in group) / len(group) for label, group in charts.setting_groups(records).items()
    }
    for label, prediction in predictions.items():
        note = below_measured(label, prediction, measured_by.get(label), costs.context_tokens if costs else 0)
        if note:
            st.caption(note[:1].upper() + note[1:])
else:
    right.caption("Speedup: not measured through a server (no plain baseline).")
with_tokens = [i for i, r in enumerate(records) if r.tokens]
if with_tokens:
    st.subheader("Token heatmap")
    which = st.selectbox(
        "Run",
        with_tokens,
        format_func=lambda i: f"{charts.setting_label(records[i].method, records[i].k)} · {records[i].prompt[:50]!r}",
    )
    render.show_html(charts.heatmap_html(records[which]))

left, right = st.columns(2)
exported = {"methods": run_methods, "ks": run_ks, **shown_meta(meta, LIMITS)}
verdict_doc = verdict_document(verdicts)
left.download_button(
    "Download CSV (one row per prompt × method × K)",
    results_csv(records, verdict_doc, exported, ranked),
    "specviz-workload.csv",
    "text/csv",
)
right.download_button(
    "Download JSON (everything, with vLLM-shaped metrics)",
    results_json(records, base, exported, costs, base.seed, verdict_doc, ranked),
    "specviz-workload.json",
    "application/json",
)
under_load()
