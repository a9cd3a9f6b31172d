"""Workload parsing (every input form and every bad row) and the statistics, checked against hand-built traces."""

import csv
import io
import json
import math

import pytest

from specviz.core.record import CSV, JSON, RunRecord, result_columns
from specviz.core.settings import RunSettings
from specviz.core.stats import bootstrap_ci
from specviz.core.trace import ExtraToken, Position, Round, Totals, Trace
from specviz.measure.prompts import WorkloadError, parse_workload
from specviz.measure.summary import RANK_COLUMNS, SETTING_COLUMNS, VERDICT_COLUMNS, results_csv, results_json, summarize
from specviz.measure.workload import PairedRun, run_workload


def record_of(spec: Trace, plain: Trace, tag: str) -> PairedRun:
    return PairedRun((RunRecord.of_trace(spec, tag),), (RunRecord.of_trace(plain, tag),))


def test_jsonl_rows_tags_and_bad_lines_by_number():
    data = '{"prompt": "a", "tag": "code"}\n\n{"prompt": ""}\nnot json\n["x"]\n{"prompt": "b"}\n'
    workload = parse_workload(data, "w.jsonl")
    assert [(r.prompt, r.tag, r.line) for r in workload.rows] == [("a", "code", 1), ("b", "untagged", 6)]
    assert workload.problems == (
        'line 3: missing or empty "prompt"',
        "line 4: not valid JSON (Expecting value)",
        'line 5: expected an object with a "prompt" field',
    )


def test_csv_needs_a_prompt_column_and_reports_empty_rows():
    workload = parse_workload('Prompt,tag\nhello,greet\n,empty\n"multi\nline",x\n', "w.csv")
    assert [(r.prompt, r.tag) for r in workload.rows] == [("hello", "greet"), ("multi\nline", "x")]
    assert workload.problems == ('line 3: missing or empty "prompt"',)
    with pytest.raises(WorkloadError, match="no 'prompt' column \\(its columns: text, tag\\)"):
        parse_workload("text,tag\nhello,x\n", "w.csv")


def test_text_splits_on_dashes_or_blank_lines():
    dashed = parse_workload("def f():\n\n    pass\n---\nsecond\n---\n", "p.txt")
    assert [r.prompt for r in dashed.rows] == ["def f():\n\n    pass", "second"]
    blank = parse_workload("one\ntwo\n\n\nthree\n", "p.txt")
    assert [r.prompt for r in blank.rows] == ["one\ntwo", "three"]


@pytest.mark.parametrize(
    "data, name, message",
    [
        (b"\x89PNG\r\n\x1a\n\x00\x00", "img.png", "looks binary"),
        (b"\xff\xfe bad", "w.txt", "not UTF-8"),
        (b"x" * 2_000_001, "big.txt", "limited to 2,000 kB"),
        (b"\n\n", "w.txt", "no usable prompts"),
        ("\n".join(f'{{"prompt": "p{i}"}}' for i in range(501)), "w.jsonl", "at most 500"),
    ],
)
def test_unusable_files_are_refused_clearly(data, name, message):
    with pytest.raises(WorkloadError, match=message):
        parse_workload(data, name)


def pos(i, verdict, overlap):
    return Position(i, 1, "x", 0.5, 0.5, 1.0, 0.1, verdict == "accepted", verdict, overlap=overlap)


def trace_of(rounds, method="draft", k=3, wall=1.0):
    rounds = tuple(rounds)
    return Trace(RunSettings(method=method, k=k), "prompt", (1,), rounds, "", Totals.of(rounds, wall))


def rnd(i, verdicts, overlaps, extra="correction"):
    positions = tuple(pos(j, v, o) for j, (v, o) in enumerate(zip(verdicts, overlaps)))
    committed = tuple(range(sum(v == "accepted" for v in verdicts) + 1))
    return Round(i, positions, ExtraToken(2, "y", extra, 1, 1, 0.5), (), committed, 1.0, 1.0, (0, 0), (0, 0))


def test_record_statistics_against_a_hand_built_trace():
    # round 1 accepts 1 then rejects; round 2 accepts all 3 (bonus): positions reached 2, 2, 1; accepted 2, 1, 1
    spec = trace_of(
        [
            rnd(0, ["accepted", "rejected", "unreached"], [0.9, 0.4, 0.7]),
            rnd(1, ["accepted", "accepted", "accepted"], [0.7, 0.6, 0.5], "bonus"),
        ],
        wall=1.0,
    )
    plain = trace_of([rnd(i, [], [], "target") for i in range(6)], method="plain", k=3, wall=2.0)
    rec = record_of(spec, plain, "code")
    assert (rec.proposed, rec.judged, rec.accepted, rec.rounds, rec.committed) == (6, 5, 4, 2, 6)
    assert rec.alpha == pytest.approx(4 / 5)
    assert rec.acceptance_rate == pytest.approx(4 / 6)
    assert rec.tau == 3.0
    assert rec.speedup == pytest.approx((6 / 1.0) / (6 / 2.0))
    doc = rec.to_dict()
    assert doc["vllm_metrics"]["draft_acceptance_rate"] == pytest.approx(4 / 6)
    assert [(p["reached"], p["accepted"]) for p in doc["per_position"]] == [(2, 2), (2, 1), (1, 1)]
    assert [p["rate"] for p in doc["per_position"]] == [1.0, 0.5, 1.0]
    assert [p["overlap"] for p in doc["per_position"]] == pytest.approx([0.8, 0.5, 0.5])
    assert doc["accepted_lengths"] == [0, 1, 0, 1]
    assert doc["vllm_metrics"]["mean_acceptance_length"] == 3.0
    assert doc["vllm_metrics"]["num_accepted_tokens_per_pos"] == [2, 1, 1]
    assert doc["per_round_accepted"] == (1, 3)
    assert doc["per_round_drafted"] == (3, 3)
    assert doc["source"] == "specviz"


def test_summary_pools_alpha_and_bootstraps_reproducibly():
    spec_a = trace_of([rnd(0, ["accepted", "rejected", "unreached"], [1, 1, 1])])
    spec_b = trace_of([rnd(0, ["rejected", "unreached", "unreached"], [1, 1, 1])])
    plain = trace_of([rnd(i, [], [], "target") for i in range(2)], method="plain", wall=1.0)
    records = [record_of(spec_a, plain, "x"), record_of(spec_b, plain, "y")]
    rows = summarize(records)
    overall = next(r for r in rows if r["tag"] == "all")
    assert overall["alpha"] == pytest.approx(1 / 3)
    assert overall["acceptance_rate"] == pytest.approx(1 / 6)
    assert overall["prompts"] == 2
    assert summarize(records) == rows  # same seed, same intervals
    assert {r["tag"] for r in rows} == {"all", "x", "y"}
    low, high = bootstrap_ci([1.0, 2.0, 3.0, 4.0])
    assert 1.0 <= low < 2.5 < high <= 4.0
    low, high = bootstrap_ci([0.9, 0.1], [1, 9])  # pooled 0.18: the interval holds the pooled value
    assert low <= 0.18 <= high
    assert overall["alpha_ci"][0] <= overall["alpha"] <= overall["alpha_ci"][1]
    assert all(math.isnan(v) for v in bootstrap_ci([]))


def test_exports_have_the_documented_shape():
    spec = trace_of([rnd(0, ["accepted", "rejected", "unreached"], [1, 1, 1])])
    plain = trace_of([rnd(0, [], [], "target")], method="plain")
    records = [record_of(spec, plain, "code")]
    rows = list(csv.DictReader(io.StringIO(results_csv(records))))
    assert rows[0]["method"] == "draft"
    assert rows[0]["tag"] == "code"
    doc = json.loads(results_json(records, RunSettings(), {"target": "t"}))
    assert {"runs", "summary", "settings"} <= doc.keys()
    run = doc["runs"][0]
    # the CSV's header is the schema's CSV view, in its order, then how the row was produced and its verdict
    assert list(rows[0]) == [*result_columns(CSV), *SETTING_COLUMNS, *VERDICT_COLUMNS, *RANK_COLUMNS]
    for key in result_columns(JSON):  # every column of the one schema (core/record.py), and the paired extras
        assert key in run
    assert {"speedup_repeats", "vllm_metrics"} <= run.keys()


def test_run_workload_runs_plain_once_per_prompt_and_every_method_and_k(load):
    from specviz.measure.lanes import run_method

    pair = load("llama-target", "llama-truncated")
    calls = []

    def gen(prompt, settings, tag):
        calls.append((prompt, settings.method, settings.k, settings.max_new_tokens))
        return run_method(pair, prompt, settings, settings.method, tag=tag)

    rows = parse_workload("def f\n---\nclass A\n", "w.txt").rows
    seen = []
    records = list(run_workload(gen, rows, ["draft", "ngram"], [2, 3], RunSettings(max_new_tokens=12), seen.append))
    assert [(r.prompt, r.method, r.k) for r in records] == [
        (p, m, k) for p in ("def f", "class A") for m in ("draft", "ngram") for k in (2, 3)
    ]
    measured = [c for c in calls if c[3] == 12]
    assert [c[1] for c in measured].count("plain") == 2
    assert seen[-1].done == seen[-1].total == 8


def test_every_timed_run_makes_exactly_max_new_tokens_and_repeats_are_kept(load):
    from specviz.measure.lanes import run_method

    pair = load("llama-target", "llama-truncated")
    seen_settings = []

    def gen(prompt, settings, tag):
        seen_settings.append(settings)
        return run_method(pair, prompt, settings, settings.method, tag=tag)

    rows = parse_workload("def f\n---\nclass A\n", "w.txt").rows
    results = list(run_workload(gen, rows, ["draft"], [2], RunSettings(max_new_tokens=10), repeats=2))
    assert all(not s.stop_at_eos for s in seen_settings)  # EOS ignored: every speed timed over the same length
    assert [len(r.runs) for r in results] == [2, 2]
    assert [len(r.plains) for r in results] == [2, 2]
    assert all(run.committed == 10 for r in results for run in (*r.runs, *r.plains))
    first, second = results[0].runs
    assert first.output_ids == second.output_ids  # repeats differ only in their clocks
    assert len(results[0].speedups) == 2
    assert results[0].to_dict()["speedup_repeats"] == list(results[0].speedups)
