"""The timing protocol behind every speedup (measure/timing.py, core/stats.py): alternating order, paired ratios,
an interval that holds the spread it was built from, the words that say how a figure was timed, and the flag that
says whether a live figure agrees with a recorded bench."""

import math

import numpy as np
import pytest

from specviz.core import stats
from specviz.core.settings import RunSettings
from specviz.measure import timing
from specviz.measure.race import MEASURED, Race, Sweep, sweep_warnings


def test_alternate_runs_forward_then_backward_and_returns_results_in_runner_order():
    calls = []
    runners = [lambda name=name: calls.append(name) or name.upper() for name in ("plain", "spec", "hf")]
    results = timing.alternate(runners, 3)
    assert calls == ["plain", "spec", "hf", "hf", "spec", "plain", "plain", "spec", "hf"]  # no lane always first
    assert results == [["PLAIN", "SPEC", "HF"]] * 3  # whatever order they ran in
    with pytest.raises(ValueError):
        timing.alternate(runners, 0)


def test_paired_ratios_divide_each_repeat_by_its_own_plain_run():
    # repeat 2 ran on a machine twice as slow for both sides: its ratio is the same as the others'
    assert timing.paired_ratios([150.0, 75.0, 160.0], [100.0, 50.0, 100.0]) == (1.5, 1.5, 1.6)
    assert timing.paired_ratios([150.0], [0.0]) == ()  # no plain speed: no ratio


def test_timing_reports_the_median_and_a_range_that_holds_every_repeat():
    spread = (0.89, 1.19, 1.07, 0.97, 1.10)  # a bench's run-to-run spread, as five repeats
    timed = timing.Timing(spread, temperature=0.0, tokens=48)
    assert timed.speedup == 1.07
    low, high = timed.interval
    assert all(low <= r <= high for r in spread)
    assert timed.cell() == "1.07× (0.89–1.19)"
    words = timed.words()
    for part in ("greedy", "warm-up", "5 times in alternating order", "48 new tokens", "0.89–1.19×", "one prompt"):
        assert part in words
    once = timing.Timing((1.52,), temperature=1.0, tokens=48)
    assert once.interval is None and once.cell() == "1.52×"
    assert "timed once, so it carries no interval" in once.words()
    assert "sampled at temperature 1" in once.words()


def test_workload_interval_covers_a_drift_between_repeats_that_the_bootstrap_alone_misses():
    """Every prompt's repeat 1 ran on a quiet machine (~1.10x) and repeat 2 on a busy one (~0.97x): the figure a
    second measurement would give moves by that much, so the interval must hold both repeats' own means."""
    rng = np.random.default_rng(7)
    prompts = 30
    quiet = 1.10 + rng.normal(0, 0.01, prompts)
    busy = 0.97 + rng.normal(0, 0.01, prompts)
    groups = [[q, b] for q, b in zip(quiet, busy)]
    boot = stats.bootstrap_ci_nested(groups, seed=0)
    low, high = stats.speedup_interval(groups, seed=0)
    means = stats.repeat_means(groups)
    assert means == pytest.approx([quiet.mean(), busy.mean()])
    assert not (boot[0] <= means[1] and means[0] <= boot[1])  # the bootstrap alone misses at least one repeat
    assert low <= min(means) and max(means) <= high  # the widened interval holds both
    assert (low, high) == stats.speedup_interval(groups, seed=0)  # seeded: the same every time
    assert all(math.isnan(v) for v in stats.speedup_interval([[], [math.nan]]))


def test_workload_interval_is_the_bootstrap_when_repeats_agree():
    rng = np.random.default_rng(3)
    groups = [[v, v] for v in 1.2 + rng.normal(0, 0.1, 20)]  # both repeats timed alike: no drift to add
    assert stats.speedup_interval(groups, seed=1) == stats.bootstrap_ci_nested(groups, seed=1)


ENV = {
    "target": "assets/models/pystdlib/target",
    "draft": "assets/models/pystdlib/draft",
    "cpu": "AMD EPYC",
    "cpu_capability": "AVX512",
    "dtype": "float32",
    "torch_threads": 2,
    "load_average": 3.5,
}


def bench_doc(speedup=1.78, speedup_range=None, **env):
    row = {"method": "draft", "k": 4, "speedup_vs_plain": speedup}
    if speedup_range:
        row["speedup_range"] = speedup_range
    return {
        "file": "cpu-float32-vocab1024.json",
        "environment": {**ENV, "target": "/elsewhere/assets/models/pystdlib/target", "load_average": 2.85, **env},
        "settings": {"draft_vocab": 1024, "sampling": {"temperature": 0.0}},
        "results": [{"method": "plain", "k": 0, "speedup_vs_plain": 1.0}, row],
    }


def test_against_bench_agrees_disagrees_or_is_not_comparable():
    docs = [bench_doc()]
    agrees = timing.against_bench(1.6, (1.5, 1.9), ENV, 4, 1024, 0.0, docs)  # the bench's 1.78 is in the range
    assert agrees.verdict == timing.AGREES and agrees.bench_speedup == 1.78
    assert "the draft-model lane at K = 4, float32" in agrees.reason and "1.60× (1.50–1.90), holds it" in agrees.reason
    apart = timing.against_bench(0.38, (0.30, 0.45), ENV, 4, 1024, 0.0, docs)
    assert apart.verdict == timing.DISAGREES
    assert "busy machine" in apart.reason and "2.85" in apart.reason and "3.5" in apart.reason
    assert "disagrees" in timing.agreement_words(apart)


def test_a_live_range_that_misses_the_bench_figure_but_meets_its_runs_spread_does_not_agree():
    """A past bug: 1.45× (1.33–1.51) beside a bench of 1.85× whose runs ranged 1.19–2.77× said "agrees"."""
    ranged = [bench_doc(speedup=1.85, speedup_range=[1.19, 2.77])]
    beside = timing.against_bench(1.45, (1.33, 1.51), ENV, 4, 1024, 0.0, ranged)
    assert beside.verdict == timing.WITHIN_SPREAD
    words = timing.agreement_words(beside)
    assert "agrees" not in words
    assert "measured 1.85×, the median of its runs, which ranged 1.19–2.77×" in words
    assert "1.45× (1.33–1.51), does not hold 1.85×" in words
    assert timing.against_bench(1.0, None, ENV, 4, 1024, 0.0, ranged).verdict == timing.DISAGREES  # below the spread
    assert timing.against_bench(1.5, None, ENV, 4, 1024, 0.0, ranged).verdict == timing.WITHIN_SPREAD  # no range
    assert timing.against_bench(1.85, None, ENV, 4, 1024, 0.0, ranged).verdict == timing.WITHIN_SPREAD  # can't hold
    assert timing.against_bench(1.8, (1.7, 1.9), ENV, 4, 1024, 0.0, ranged).verdict == timing.AGREES


def test_the_bench_words_name_the_k_they_compare_and_the_best_k_the_bench_table_lists():
    doc = bench_doc(speedup=1.85)
    doc["results"].append({"method": "draft", "k": 5, "speedup_vs_plain": 1.95})
    said = timing.against_bench(1.8, (1.7, 1.9), ENV, 4, 1024, 0.0, [doc]).reason
    assert "at K = 4" in said and "measured 1.85×" in said
    assert "the bench table lists this file at its best K, 5: 1.95×" in said
    assert "best K" not in timing.against_bench(1.8, (1.7, 1.9), ENV, 5, 1024, 0.0, [doc]).reason  # K 5 is the best


@pytest.mark.parametrize(
    "env, k, vocab, temperature, why",
    [
        ({**ENV, "cpu": "Intel(R) Xeon(R) Processor"}, 4, 1024, 0.0, "no recorded bench has CPU Intel(R) Xeon(R)"),
        (
            {**ENV, "dtype": "bfloat16"},
            4,
            1024,
            0.0,
            "no recorded bench has precision bfloat16 (the recorded bench has float32)",
        ),
        ({**ENV, "torch_threads": 1}, 4, 1024, 0.0, "no recorded bench has torch threads 1 (the recorded bench has 2)"),
        (
            ENV,
            4,
            0,
            0.0,
            "draft vocabulary the whole vocabulary (the recorded bench has its 1024 most frequent tokens)",
        ),
        (
            ENV,
            4,
            1024,
            1.0,
            "no recorded bench is sampled (this figure is sampled, T = 1; the recorded bench is greedy",
        ),
        (ENV, 3, 1024, 0.0, "no recorded bench has a draft-model row at K = 3 (the recorded bench has K = 4)"),
        ({**ENV, "target": "gpt2"}, 4, 1024, 0.0, "no recorded bench ran this target, gpt2"),
    ],
)
def test_against_bench_is_not_comparable_on_another_cpu_or_setting(env, k, vocab, temperature, why):
    found = timing.against_bench(0.38, (0.3, 0.45), env, k, vocab, temperature, [bench_doc()])
    assert found.verdict == timing.NOT_COMPARABLE
    assert why in found.reason
    assert timing.against_bench(1.0, None, ENV, 4, 1024, 0.0, []).verdict == timing.NOT_COMPARABLE


def test_not_comparable_names_the_setting_no_bench_shares_first_not_the_first_file_by_name():
    """A past bug: a sampled figure against the greedy benches named cpu-bfloat16-trees-code.json's precision
    "(and 15 more files differ)"; the reason is that no recorded bench is sampled."""
    from specviz.engine.loading.models import ASSETS
    from specviz.measure.bench import recorded_benches

    docs = recorded_benches(ASSETS / "bench")
    n = len(docs)  # every greedy bench JSON in assets/bench (the smollm2 drafters' among them)
    assert docs[0]["file"] == "cpu-bfloat16-trees-code.json" and n >= 16
    forwards = next(d for d in docs if d["file"] == "cpu-float32-forwards-code.json")["environment"]
    found = timing.against_bench(1.4, (1.3, 1.5), forwards, 4, 1024, 1.0, docs)
    assert found.verdict == timing.NOT_COMPARABLE
    assert found.reason == (
        f"no recorded bench is sampled (this figure is sampled, T = 1; the {n} recorded benches are greedy, T = 0)"
    )
    assert "cpu-bfloat16" not in found.reason and "more files differ" not in found.reason
    # every setting shared by some file, but no file shares all: the nearest file and what it differs in
    intel = next(d for d in docs if d["file"] == "cpu-float32-eagle-k4.json")["environment"]
    nearest = timing.against_bench(1.4, (1.3, 1.5), {**intel, "torch_threads": 2}, 4, 1024, 0.0, docs)
    assert nearest.reason.startswith(
        f"the nearest of the {n} recorded benches, cpu-float32-eagle-k4.json, differs in torch threads "
        "(1 there, 2 here)"
    )


def sweep(points, settings=None, prompt="p"):
    rows = [{"k": k, "kind": MEASURED, "speedup": s, "low": lo, "high": hi, "tau": tau} for k, s, lo, hi, tau in points]
    return Sweep(rows, None, 3, 0.0, 8, prompt, settings)


def test_sweep_warns_of_points_that_cannot_be_true():
    found = sweep_warnings(sweep([(1, 1.2, 1.1, 1.3, 1.8), (2, 3.5, 3.0, 4.0, 2.2), (4, 0.9, 0.3, 2.0, 3.0)]))
    assert len(found) == 2
    assert "K = 2: 3.50× is above τ = 2.20" in found[0]
    assert "K = 4: its repeats spread from 0.30× to 2.00×" in found[1]


def test_sweep_warns_when_its_k_disagrees_with_the_race_lane_on_the_same_prompt_and_settings():
    settings = RunSettings(method="draft", k=4)
    lanes = Race([], {}, {"draft": timing.Timing((1.6, 1.5, 1.7), 0.0, 8)}, "p", settings)
    cold = sweep([(4, 0.38, 0.35, 0.41, 2.5)], settings)  # a 0.38x at K = 4 once shown next to a 1.6x lane
    (found,) = sweep_warnings(cold, lanes)
    assert "K = 4: the sweep measured 0.38× (0.35–0.41)" in found and "1.60× (1.50–1.70)" in found
    assert sweep_warnings(sweep([(4, 1.55, 1.4, 1.62, 2.5)], settings), lanes) == []  # ranges meet
    assert sweep_warnings(sweep([(4, 0.38, 0.35, 0.41, 2.5)], settings, prompt="other"), lanes) == []


def record(method, wall_s, prompt="p", k=2):
    """A run that made 10 tokens in wall_s seconds (10 / wall_s tokens/s)."""
    from specviz.core.record import RunRecord

    n = 10
    return RunRecord("specviz", method, k, prompt, "", tuple(range(n)), (n,), (k,), (0,), (k,), (wall_s,), wall_s)


def test_workload_repeats_alternate_plain_first_then_last():
    from specviz.measure.prompts import PromptRow
    from specviz.measure.workload import run_workload

    order = []

    def source(prompt, settings, tag):
        if tag:  # the warm-up runs carry no tag
            order.append((settings.method, settings.k))
        return record(settings.method, 0.1, prompt, settings.k)

    rows = [PromptRow("p", "t", 1)]
    list(run_workload(source, rows, ["draft"], [2, 3], RunSettings(max_new_tokens=10), repeats=3))
    forward = [("plain", 0), ("draft", 2), ("draft", 3)]
    plain_k = RunSettings().k  # the plain run keeps the base settings' K
    forward = [(m, plain_k if m == "plain" else k) for m, k in forward]
    assert order == forward + forward[::-1] + forward


def test_workload_csv_json_and_chart_carry_the_interval_the_repeats_spread_over():
    import csv
    import io
    import json

    from specviz.measure.summary import results_csv, results_json, summarize
    from specviz.measure.workload import PairedRun
    from specviz.viz import workload_charts

    # prompt by prompt: repeat 1 at 1.2x, repeat 2 at 0.9x, repeat 3 at 1.5x (plain at 100 tokens/s throughout)
    results = [
        PairedRun(
            tuple(record("draft", 0.1 / s, f"p{i}") for s in (1.2, 0.9, 1.5)),
            tuple(record("plain", 0.1, f"p{i}") for _ in range(3)),
        )
        for i in range(6)
    ]
    rows = list(csv.DictReader(io.StringIO(results_csv(results))))
    assert [(float(r["speedup_low"]), float(r["speedup_high"])) for r in rows] == [(0.9, 1.5)] * 6
    doc = json.loads(results_json(results, RunSettings(), {}))
    assert doc["runs"][0]["speedup_low"] == pytest.approx(0.9)
    overall = next(r for r in summarize(results) if r["tag"] == "all")
    low, high = overall["speedup_ci"]
    assert low <= 0.9 + 1e-9 and high >= 1.5 - 1e-9  # every repeat's own figure inside: 0.9x and 1.5x
    assert doc["summary"][0]["speedup_ci"] == pytest.approx([low, high])
    frame = workload_charts.speedup_frame(results, {})
    measured = frame[frame["kind"] == "measured"].iloc[0]
    assert (measured["low"], measured["high"]) == pytest.approx((low, high))  # the bars the verdict quotes
    layers = workload_charts.speedup_chart(results, {}).to_dict()["layer"]
    bars = next(layer for layer in layers if layer["mark"]["type"] == "errorbar")
    assert (bars["encoding"]["x"]["field"], bars["encoding"]["x2"]["field"]) == ("low", "high")


def test_race_lanes_above_their_tau_or_spread_wider_than_their_figure_are_flagged():
    plain, draft, ngram = record("plain", 0.1), record("draft", 0.05), record("ngram", 0.05)  # τ = 10 tokens / 1 pass
    timings = {
        "plain": timing.Timing((1.0, 1.0, 1.0), 0.0, 10),
        "draft": timing.Timing((12.1, 0.68, 0.15), 0.0, 10),  # measured on a swamped machine: 0.15x to 12.1x
        "ngram": timing.Timing((1.9, 2.0, 2.1), 0.0, 10),
    }
    (found,) = timing.implausible_lanes([plain, draft, ngram], timings)
    assert found.startswith("specviz · draft model: its repeats spread from 0.15× to 12.10×")
    above = {**timings, "ngram": timing.Timing((11.0, 12.0, 12.5), 0.0, 10)}
    assert any("n-gram" in f and "is above τ = 10.00" in f for f in timing.implausible_lanes([ngram], above))


def test_the_median_repeat_is_the_one_whose_ratio_is_the_median_speedup():
    spec, plain = (220.0, 220.1, 198.2), (126.0, 131.0, 118.0)  # ratios 1.746, 1.680, 1.680 (once on the home page)
    i = timing.median_repeat(spec, plain)
    assert i == 1 and spec[i] / plain[i] == timing.Timing(timing.paired_ratios(spec, plain), 0.0, 48).speedup
    assert timing.median_repeat((1.0, 2.0), (1.0, 1.0)) is None  # an even count: the median lies between two
    assert timing.median_repeat((), ()) is None


def test_a_speedup_that_differs_from_the_medians_ratio_says_so_with_its_numbers():
    plain, draft = (127.0, 137.7, 150.0), (127.0 * 1.45, 137.7 * 1.33, 150.0 * 1.51)  # the race of test_race_numbers
    speedup = timing.Timing(timing.paired_ratios(draft, plain), 0.0, 48).speedup
    assert round(speedup, 2) == 1.45
    assert timing.shown_ratio_differs(184.15, 137.7, speedup)
    words = timing.medians_apart_words("draft", draft, plain, speedup)
    assert words == "draft 184.2 / 137.7 = 1.34, its repeats' ratios 1.45, 1.33, 1.51: 1.45×"
    steady = (100.0, 100.0, 100.0)
    assert timing.medians_apart_words("draft", (150.0, 151.0, 149.0), steady, 1.5) is None  # 150 / 100: the same


def test_home_words_for_an_even_count_of_repeats_say_why_the_medians_ratio_is_another_figure():
    from dataclasses import replace

    from specviz.measure.race import VersusPlain

    spec, plain = (200.0, 150.0), (100.0, 120.0)  # ratios 2.0, 1.25: median 1.625; medians 175 / 110 = 1.59
    result = VersusPlain(None, None, 175.0, 110.0, timing.Timing((2.0, 1.25), 0.0, 48), None, spec, plain)
    words = result.speeds_words()
    assert words.startswith("Median 175.0 vs 110.0 tokens/s, each side's median taken apart: 1.59×, not the 1.62×")
    assert "plain ran at 100.0, 120.0 tokens/s" in words
    odd = replace(result, spec_repeats=(200.0, 150.0, 160.0), plain_repeats=(100.0, 120.0, 100.0))
    assert odd.speeds_words() == "In the median repeat 160.0 vs 100.0 tokens/s: 1.60×."


@pytest.mark.parametrize(
    ("ratios", "ending"),
    [
        ((1.6, 1.7, 1.8), "enough to pay for the guessing and the checking."),
        ((0.97, 1.0, 1.02), "so no real gain."),
        ((0.7, 0.8, 0.9), "so speculation lost time here."),
    ],
)
def test_the_home_pages_two_sentences_say_what_was_measured_and_what_it_means(ratios, ending):
    from types import SimpleNamespace

    from specviz.measure.race import VersusPlain

    spec = SimpleNamespace(totals=SimpleNamespace(rounds=20, alpha=0.634, tau=2.4))
    plain = SimpleNamespace(totals=SimpleNamespace(rounds=48))
    result = VersusPlain(spec, plain, 1.0, 1.0, timing.Timing(ratios, 0.0, 48), None)
    words = result.summary_words()
    first, second = words.split(". ", 1)
    assert first.endswith(f"it needed 20 passes instead of 48 and was {ratios[1]:.2f}× as fast")
    assert second.startswith("The target kept 63% of the draft's guesses, 2.4 tokens per pass")
    assert second.endswith(ending)
