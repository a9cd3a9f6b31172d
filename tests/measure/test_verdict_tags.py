"""The go / no-go judges each tag as well as all prompts, with the figures of the summary rows,
and goes into the JSON and the CSV with the settings that produced every row."""

import csv
import io
import json
from dataclasses import replace

import pytest

from specviz.core.record import RunRecord
from specviz.core.sampling import SamplingSettings
from specviz.core.settings import RunSettings
from specviz.measure.recommend import GO_SPEEDUP, INTERVAL, MEAN, MIN_PROMPTS, RULE, judge, verdict_document
from specviz.measure.summary import SETTING_COLUMNS, VERDICT_COLUMNS, results_csv, results_json, summarize
from specviz.measure.workload import PairedRun

SETTINGS = RunSettings(k=4, sampling=SamplingSettings(0.7, 20, 0.9), max_new_tokens=7, seed=11, draft_vocab=1024)
PAIR = {"target": "t-model", "draft": "d-model", "device": "cpu", "dtype": "bfloat16"}


def run(method, k, committed, wall, prompt, tag, settings=SETTINGS):
    drafted = tuple(0 if method == "plain" else k for _ in committed)
    accepted = tuple(max(0, c - 1) for c in committed)
    judged = tuple(min(a + 1, d) for a, d in zip(accepted, drafted))
    ends = tuple(wall * (i + 1) / len(committed) for i in range(len(committed)))
    ids = tuple(range(sum(committed)))
    body = replace(settings, method=method, k=max(k, 1), stop_at_eos=False).to_dict()
    return RunRecord(
        "specviz", method, k, prompt, "", ids, committed, drafted, accepted, judged, ends, wall, settings=body, tag=tag
    )


def paired(speedups, tag, prompt, k=4):
    """A result whose timing repeats measured these speedups over plain runs of 7 tokens in 0.03 s."""
    plains = tuple(run("plain", 0, (1,) * 7, 0.03, prompt, tag) for _ in speedups)
    runs = tuple(run("draft", k, (5, 2), 0.03 / s, prompt, tag) for s in speedups)
    return PairedRun(runs, plains)


def workload(code=(1.5, 1.6), prose=(0.8, 0.9), n=MIN_PROMPTS):
    return [paired(code, "code", f"c{i}") for i in range(n)] + [paired(prose, "prose", f"p{i}") for i in range(n)]


def test_each_tag_is_judged_as_well_as_all_prompts():
    verdicts = judge(workload(), "d", 0.0, seed=3)
    assert [v.tag for v in verdicts] == ["all", "code", "prose"]
    every, code, prose = verdicts
    assert code.go is True and code.failed == ()
    assert prose.go is False
    assert prose.failed == (MEAN, INTERVAL)  # under 1.10x, and the interval reaches 1.00x: both named
    assert f"{RULE}: it is under {GO_SPEEDUP:.2f}x, and its interval reaches 1.00x or below." in prose.reason
    assert code.prompts == prose.prompts == MIN_PROMPTS
    assert every.prompts == 2 * MIN_PROMPTS
    for v in verdicts:
        assert RULE in v.reason


def test_a_verdict_states_the_figures_of_the_summary_row_it_judged():
    """A past bug: a verdict and a table disagreed: the verdict's interval was drawn with seed 0, the table's with
    the run's seed. Every figure now comes from the summary row, whatever the seed."""
    spread = lambda tag, base: [paired((base + 0.1 * i, base + 0.02 + 0.1 * i), tag, f"{tag}{i}") for i in range(6)]
    results = spread("code", 1.0) + spread("prose", 0.8)  # prompts differ, repeats agree: the bootstrap, not the
    for seed in (0, 7):  # repeats' range, sets the interval, so its seed shows
        summary = summarize(results, seed=seed)
        for v in judge(results, "d", 0.0, seed=seed):
            row = next(r for r in summary if (r["tag"], r["method"], r["k"]) == (v.tag, v.method, v.k))
            assert (v.measured_speedup, v.speedup_ci, v.alpha, v.prompts) == (
                row["speedup"],
                tuple(row["speedup_ci"]),
                row["alpha"],
                row["prompts"],
            )
            low, high = row["speedup_ci"]
            assert f"{row['speedup']:.2f}x (95% CI {low:.2f}x–{high:.2f}x over {row['prompts']} prompts" in v.reason
    assert judge(results, "d", 0.0, seed=0)[0].speedup_ci != judge(results, "d", 0.0, seed=7)[0].speedup_ci


def test_each_tag_picks_its_own_best_setting_and_too_few_prompts_get_no_verdict():
    results = workload() + [paired((1.3, 1.3), "rare", f"r{i}") for i in range(MIN_PROMPTS - 1)]
    results += [paired((0.7, 0.7), "code", f"c{i}", k=2) for i in range(MIN_PROMPTS)]  # K = 2 is worse on code
    by_tag = {v.tag: v for v in judge(results, "d", 0.0)}
    assert by_tag["code"].k == 4
    assert "best of 2 settings" in by_tag["code"].reason
    assert by_tag["rare"].go is None
    assert f"at least {MIN_PROMPTS} prompts" in by_tag["rare"].reason


def test_one_tag_is_judged_once_as_all_prompts():
    only_code = [paired((1.5, 1.6), "code", f"c{i}") for i in range(MIN_PROMPTS)]
    assert [v.tag for v in judge(only_code, "d", 0.0)] == ["all"]


def test_the_json_carries_the_verdict_and_a_no_go_offers_no_deployment_settings():
    results = workload()
    verdicts = judge(results, "d", 0.0, seed=2)
    doc = json.loads(results_json(results, SETTINGS, PAIR, None, 2, verdict_document(verdicts)))
    assert doc["version"] == 2
    assert doc["verdict"]["rule"] == RULE
    assert (doc["verdict"]["go_speedup"], doc["verdict"]["min_prompts"]) == (GO_SPEEDUP, MIN_PROMPTS)
    groups = {g["tag"]: g for g in doc["verdict"]["groups"]}
    assert [g["verdict"] for g in doc["verdict"]["groups"]] == [v.verdict for v in verdicts]
    assert groups["prose"]["failed"] == ["mean", "interval"]
    assert groups["prose"]["vllm_config"] is None and groups["prose"]["hf_generate"] is None
    assert groups["code"]["vllm_config"] == verdicts[1].vllm_config is not None
    for tag, group in groups.items():  # the verdict's figures are the summary's
        row = next(r for r in doc["summary"] if (r["tag"], r["method"], r["k"]) == (tag, group["method"], group["k"]))
        assert (group["speedup"], group["speedup_ci"], group["prompts"]) == (
            row["speedup"],
            row["speedup_ci"],
            row["prompts"],
        )
    assert doc["settings"]["stop_at_eos"] is False  # as every workload run was decoded


def test_every_csv_row_says_how_it_was_produced_and_agrees_with_the_json():
    results = workload()
    verdict = verdict_document(judge(results, "d", 0.0))
    doc = json.loads(results_json(results, SETTINGS, {"methods": ["draft"], "ks": [4], **PAIR}, verdict=verdict))
    rows = list(csv.DictReader(io.StringIO(results_csv(results, verdict, {"methods": ["draft"], "ks": [4], **PAIR}))))
    assert len(rows) == len(results)
    env = doc["settings"]
    for row in rows:
        assert set(SETTING_COLUMNS) | set(VERDICT_COLUMNS) <= row.keys()
        assert float(row["temperature"]) == env["sampling"]["temperature"] == 0.7
        assert int(row["top_k"]) == env["sampling"]["top_k"] == 20
        assert float(row["top_p"]) == env["sampling"]["top_p"] == 0.9
        assert int(row["seed"]) == env["seed"] == 11
        assert int(row["max_new_tokens"]) == env["max_new_tokens"] == 7
        assert int(row["draft_vocab"]) == env["draft_vocab"] == 1024
        assert [row[key] for key in ("target", "draft", "device", "dtype")] == [env[key] for key in PAIR]


def test_every_csv_row_carries_the_verdict_of_its_tag_and_of_all_prompts():
    results = workload()
    verdicts = judge(results, "d", 0.0)
    rows = list(csv.DictReader(io.StringIO(results_csv(results, verdict_document(verdicts), PAIR))))
    by_tag = {v.tag: v for v in verdicts}
    for row in rows:
        v = by_tag[row["tag"]]
        assert (row["verdict"], row["verdict_group"], row["verdict_method"], int(row["verdict_k"])) == (
            v.verdict,
            v.tag,
            v.method,
            v.k,
        )
        assert float(row["verdict_speedup"]) == pytest.approx(v.measured_speedup)
        assert (float(row["verdict_ci_low"]), float(row["verdict_ci_high"])) == pytest.approx(v.speedup_ci)
        assert row["verdict_failed"] == " and ".join(v.failed)
        assert row["overall_verdict"] == by_tag["all"].verdict
        assert row["rule"] == RULE
    assert {r["verdict"] for r in rows if r["tag"] == "prose"} == {"NO-GO"}
    assert {r["verdict_failed"] for r in rows if r["tag"] == "prose"} == {"mean and interval"}
    untagged = [paired((1.5, 1.6), "untagged", f"u{i}") for i in range(MIN_PROMPTS)]
    rows = list(csv.DictReader(io.StringIO(results_csv(untagged, verdict_document(judge(untagged, "d", 0.0))))))
    assert {(r["verdict"], r["verdict_group"]) for r in rows} == {("GO", "all")}  # no tags: the whole workload's


def test_runs_without_a_plain_baseline_have_no_verdict_and_empty_figures_in_the_csv():
    served = [PairedRun((r.run,)) for r in workload()]  # a server's runs: no plain run, no speedup
    verdict = verdict_document(judge(served, None, 0.0))
    assert {g["verdict"] for g in verdict["groups"]} == {"no verdict"}
    rows = list(csv.DictReader(io.StringIO(results_csv(served, verdict, {"model": "served-model"}))))
    assert {(r["verdict"], r["verdict_speedup"], r["verdict_ci_low"], r["verdict_ci_high"]) for r in rows} == {
        ("no verdict", "", "", "")
    }
    assert {(r["target"], r["device"], r["dtype"]) for r in rows} == {("served-model", "", "")}
