"""As pure functions: a speedup shown beside tokens/s that are not its ratio says why, a
tag's best line follows the verdicts' minimum, the ranking's c reads 0 for a lookup whatever was timed, and a measured
c that was dropped (step costs that cannot be true: a busy machine) says so instead of a silent None."""

import csv
import io
from dataclasses import replace

from test_ranking import COSTS, family, paired

from specviz.measure.ranking import best_lines, c_lines, ranking
from specviz.measure.recommend import MIN_PROMPTS, judge
from specviz.measure.summary import ratio_apart_words, results_csv, summarize
from specviz.measure.workload import PairedRun
from specviz.viz.workload_charts import c_cell, ranking_frame


def ten_times(record):
    """The same run, ten times slower."""
    return replace(record, wall_s=record.wall_s * 10)


BUSY = replace(COSTS, verify_s=(0.0087,) + COSTS.verify_s[1:])  # a verify pass timed at 0.87 of a one-token step


def test_a_speedup_that_is_not_the_ratio_of_its_tokens_per_s_says_why():
    # two prompts, plain at 100 and 10 tokens/s, sped up 1.5x and 0.9x: the means are 79.5 / 55.0 = 1.45, the
    # speedup (the mean of the prompts' own ratios) 1.20x
    slow = paired("draft", 4, (0.9,), "slow", "code")
    slow = PairedRun(tuple(ten_times(r) for r in slow.runs), tuple(ten_times(p) for p in slow.plains))
    results = [paired("draft", 4, (1.5,), "fast", "code"), slow]
    row = next(r for r in summarize(results) if r["tag"] == "all")
    assert round(row["speedup"], 2) == 1.2
    assert round(row["tokens_per_s"] / row["plain_tokens_per_s"], 2) != 1.2
    words = ratio_apart_words(summarize(results), {("specviz", "draft", 4): "draft model, K = 4"})
    assert words.startswith("Why a speedup is not the ratio of the tokens/s beside it (draft model, K = 4 on all")
    assert f"{row['tokens_per_s']:.1f} / {row['plain_tokens_per_s']:.1f} tokens/s, a speedup of 1.20x" in words
    assert "the mean over prompts of each prompt's own speedup" in words
    same = [paired("draft", 4, (1.5,), f"c{i}", "code") for i in range(2)]  # every prompt alike: the ratio holds
    assert ratio_apart_words(summarize(same)) is None


def test_a_tags_best_line_and_its_verdict_follow_one_rule():
    results = family(MIN_PROMPTS) + [paired("eagle", 4, (1.43,), "q0", "qa")]  # 'qa': 1 prompt at 1.43x
    rows = ranking(results, COSTS, seed=1)
    verdicts = {v.tag: v for v in judge(results, "d", 0.0, COSTS, seed=1)}
    for line in best_lines(rows):
        tag = next(t for t in verdicts if line.startswith(f"Best for prompts tagged {t!r}:") or t == "all")
        beats = "it beats plain decoding" in line
        assert not beats or verdicts[tag].go is not None, line  # "it beats" only where there is a verdict
    qa = next(line for line in best_lines(rows) if "'qa'" in line)
    assert verdicts["qa"].go is None
    assert "at 1.43x" in qa and "measured on 1 prompt, too few for a go / no-go" in qa
    assert "it beats plain decoding" not in qa


def test_c_is_0_for_a_lookup_and_a_dropped_measured_cost_says_so():
    rows = [r for r in ranking(family(), BUSY, seed=1) if r["tag"] == "all"]
    by = {r["method"]: r for r in rows}
    assert by["suffix"]["c"] == 0.0 and by["suffix"]["c_note"] == ""  # a lookup runs no model: 0, busy or not
    assert by["draft"]["c"] is None and by["draft"]["c_note"].startswith("dropped: the step costs timed just before")
    assert c_lines(rows) == [
        "c is dropped for draft model, K = 4; EAGLE-1 head, K = 4: the step costs timed just before the workload "
        "cannot be true (a verify pass over 2 tokens timed at 0.87 of a one-token step, which it cannot be: the "
        "machine was busy while timing), so no c is built on them."
    ]
    frame = ranking_frame(rows)
    assert dict(zip(frame["setting"], frame["c"])) == {
        "Suffix decoding, K = 4": "0",
        "draft model, K = 4": "dropped: busy timings",
        "EAGLE-1 head, K = 4": "dropped: busy timings",
    }
    table = list(csv.DictReader(io.StringIO(results_csv(family(), None, {}, ranking(family(), BUSY)))))
    assert {(r["method"], r["c"], r["c_note"][:8]) for r in table} == {
        ("suffix", "0.0", ""),
        ("draft", "", "dropped:"),
        ("eagle", "", "dropped:"),
    }  # the CSV says why its c cell is empty
    assert c_lines(ranking(family(), COSTS)) == []  # every c known: nothing to say
    assert (c_cell(0.2), c_cell(0.0), c_cell(None, "not timed"), c_cell(None)) == ("0.200", "0", "not timed", "–")
