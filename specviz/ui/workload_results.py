"""The workload page's results, drawn: how they were measured, the recommendation and its deployment settings, the
family ranked, the tables and charts, and the downloads (the decisions are in measure/workload_policy.py, the prose in
assets/lessons/workload.json)."""

from __future__ import annotations

import json

import streamlit as st

from specviz import methods
from specviz.engine.loading.models import ASSETS
from specviz.measure import workload_policy as policy
from specviz.measure.bench import recorded_benches
from specviz.measure.predict import below_measured, predict
from specviz.measure.race_lanes import untrusted_words
from specviz.measure.ranking import best_lines, c_lines, doubt_lines, ranking
from specviz.measure.recommend import judge, verdict_document
from specviz.measure.summary import ALL, INTERVAL_COVERS, ratio_apart_words, results_csv, results_json, summarize
from specviz.measure.timing import DISAGREES, against_bench, agreement_words, timing_words, workload_interval_kind
from specviz.ui import render, spec_bench
from specviz.ui import workload as drive
from specviz.ui.limits import Limits, shown_meta
from specviz.ui.notes import show_note
from specviz.ui.render import draw
from specviz.ui.workload_sections import LESSON
from specviz.viz import workload_charts as charts
from specviz.viz.explain import ALPHA_HELP
from specviz.viz.text import literal, user_message


def show_results(records: list, settings, limits: Limits) -> None:
    """Every section of the measured results, in the page's order."""
    state = st.session_state
    base, meta, run_methods, run_ks, costs = state["workload_settings"]
    changed = drive.settings_changed(base, settings)
    if changed:
        st.info(f"These results were measured with {changed}: press ▶ Measure to measure with the sidebar's settings.")
    served = any(r.source == "vllm" for r in records)
    speedup_measured = any(r.speedup is not None for r in records)
    planned = state.get("workload_planned", len(records))
    st.caption(
        drive.measured_words(len(records), planned, max(len(r.runs) for r in records), served)
        + policy.run_context(base, meta, served, len(records) == planned)
    )
    if state.get("workload_stopped"):
        st.warning(literal(state["workload_stopped"]))
    warned = policy.warnings_words([r.run.meta.get("warnings") for r in records])
    if warned:
        st.warning(warned)
    if policy.warns_of_greedy_drafts(served, base.sampling.temperature, meta.get("method")):
        st.info(LESSON["vllm_greedy_draft"])
    summary = summarize(records, costs, base.seed)
    ranked = ranking(records, costs, base.seed, summary)
    st.subheader("Recommendation")
    # all prompts, then each tag: their figures are the summary table's rows, the same seed's intervals
    verdicts = judge(records, meta.get("draft"), base.sampling.temperature, costs, base.seed, summary)
    show_recommendation(records, verdicts, summary, ranked, base, costs, speedup_measured, len(records) == planned)
    show_deployment(verdicts, served, speedup_measured)
    show_ranked(ranked, speedup_measured)
    spec_bench.results_section(ranked, records)
    show_tables_and_charts(records, summary, ranked, costs, served, speedup_measured)
    left, right = st.columns(2)
    exported = {"methods": run_methods, "ks": run_ks, **shown_meta(meta, limits)}
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


def show_recommendation(records, verdicts, summary, ranked, base, costs, speedup_measured: bool, complete: bool):
    """The verdict over all prompts and per tag, the interval it quotes, the bench and the earlier measurements."""
    advice, per_tag = verdicts[0], verdicts[1:]
    show_note(policy.headline(advice.go, advice.reason, speedup_measured, LESSON["no_go_server"], bool(advice.doubts)))
    for verdict in per_tag if speedup_measured else ():  # each tag judged on its own, by the same rule
        show_note(policy.tag_verdict(verdict.go, verdict.tag, verdict.reason, bool(verdict.doubts)))
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
        env = st.session_state.get(drive.ENVIRONMENT)
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
        for agree, sentence in drive.compared_with_earlier(summary, names, complete):
            show_note(policy.earlier_note(agree, sentence))
    if costs is not None and costs.implausible:
        st.warning(f"No predicted speedup is shown: {costs.implausible}")


def show_deployment(verdicts, served: bool, speedup_measured: bool) -> None:
    """vLLM's and Hugging Face's settings for each GO (the JSON's vllm_config and hf_generate say the same)."""
    advice = verdicts[0]
    deployable = [v for v in verdicts if v.offered]
    if not served and not advice.offered and speedup_measured:
        st.caption(policy.no_deployment_words(advice.go, bool(deployable)))
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


def show_ranked(ranked: list[dict], speedup_measured: bool) -> None:
    """With several settings: the family ranked, best first per tag, as lines, a table and a chart."""
    if not ranks_several(ranked):
        return
    st.subheader("The family ranked")
    for line in best_lines(ranked):
        st.markdown("- " + literal(line))
    render.show_table(st, charts.ranking_frame(ranked, speedup_measured))
    st.caption(LESSON["ranking"])
    for line in c_lines(ranked):  # a measured cost that was dropped says so
        st.caption(line)
    if doubts := untrusted_words("speedups", doubt_lines(ranked)):
        st.warning(doubts)
    if speedup_measured:
        draw(st, charts.ranking_chart(ranked, ALL))


def ranks_several(ranked: list[dict]) -> bool:
    """Whether the family is ranked on the page (several settings): its warnings then stand under the ranking."""
    return len({(r["method"], r["k"]) for r in ranked}) > 1


def show_tables_and_charts(
    records: list, summary: list[dict], ranked: list[dict], costs, served: bool, speedup_measured: bool
) -> None:
    """Per tag and per prompt tables, the position, length, step, class and speedup charts, and the token heatmap."""
    st.subheader("Per tag and overall")
    render.show_table(st, charts.summary_frame(summary, speedup_measured))
    st.caption(ALPHA_HELP)
    names = {(r["source"], r["method"], r["k"]): r["setting"] for r in ranked if r["tag"] == ALL}
    if speedup_measured and (apart := ratio_apart_words(summary, names)):
        st.caption(apart)
    doubts = untrusted_words("speedups", doubt_lines(ranked))
    if speedup_measured and doubts and not ranks_several(ranked):  # else said under the ranking, above
        st.warning(doubts)
    st.subheader("Per prompt")
    render.show_table(st, charts.per_prompt_frame(records, speedup_measured))
    left, right = st.columns(2)
    draw(left, charts.per_position_chart(records))
    draw(right, charts.acceptance_length_chart(records))
    strip = charts.step_strip_frame(records)
    if len(strip):
        draw(st, charts.step_strip_chart(records))
        if served:
            st.caption(LESSON["strip_prefill"])
    else:
        st.caption(LESSON["no_per_step"])
    left, right = st.columns(2)
    if any(r.by_class for r in records):
        draw(left, charts.class_chart(records))
    if speedup_measured:
        show_predicted(records, costs, right)
    else:
        right.caption(LESSON["no_speedup"])
    with_tokens = [i for i, r in enumerate(records) if r.tokens]
    if with_tokens:
        st.subheader("Token heatmap")
        which = st.selectbox(
            "Run",
            with_tokens,
            format_func=lambda i: (
                f"{charts.setting_label(records[i].method, records[i].k)} · {user_message(records[i].prompt)[:50]!r}"
            ),
        )
        render.show_html(charts.heatmap_html(records[which]))


def show_predicted(records: list, costs, where) -> None:
    """The measured speedups beside the predicted ones, and where a prediction falls below the measurement."""
    groups = charts.setting_groups(records)
    predictions = {label: predict([r.run for r in group], costs) for label, group in groups.items()}
    draw(where, charts.speedup_chart(records, predictions))
    st.caption(LESSON["predicted"])
    if costs is not None and costs.verify_noise:
        st.caption(costs.verify_noise)
    measured_by = {label: sum(r.speedup for r in group) / len(group) for label, group in groups.items()}
    for label, prediction in predictions.items():
        note = below_measured(label, prediction, measured_by.get(label), costs.context_tokens if costs else 0)
        if note:
            st.caption(policy.sentence_case(note))
