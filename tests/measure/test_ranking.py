"""The whole family ranked per tag: best measured speedup first, with its interval, α, τ, c and
drafts per round, in the command line's text, the JSON and the CSV; and which methods `--method all` runs."""

import csv
import io
import json
from dataclasses import replace

import pytest

from specviz import methods
from specviz.core.record import RunRecord
from specviz.core.settings import RunSettings
from specviz.engine.costs import MeasuredCosts
from specviz.measure.ranking import best_lines, ranking, setting_words
from specviz.measure.recommend import MIN_PROMPTS
from specviz.measure.summary import RANK_COLUMNS, results_csv, results_json
from specviz.measure.workload import PairedRun

COSTS = MeasuredCosts(
    "t", "d", "cpu", "float32", 10, 5, draft_step_s={"draft": 0.002, "eagle": 0.003, "medusa": 0.001},
    target_step_s=0.01, verify_s=(0.011,) * 8, pass_drafts={"medusa": 4},
)  # fmt: skip  # c: draft 0.2, EAGLE-1 0.3, Medusa 0.1 per draft, lookups 0


def run(method, k, drafted, accepted, wall, prompt, tag, **settings):
    """One run of 7 tokens: per round `drafted` drafts, `accepted` of them kept (each round commits accepted + 1)."""
    committed = tuple(a + 1 for a in accepted)
    judged = tuple(min(a + 1, d) for a, d in zip(accepted, drafted))
    ends = tuple(wall * (i + 1) / len(committed) for i in range(len(committed)))
    body = RunSettings(method=method, k=max(k, 1), stop_at_eos=False, **settings).to_dict()
    ids = tuple(range(sum(committed)))
    return RunRecord(
        "specviz", method, k, prompt, "", ids, committed, drafted, accepted, judged, ends, wall, settings=body, tag=tag
    )


def paired(method, k, speedups, prompt, tag, drafted=(4, 4), accepted=(3, 2), **settings):
    """A result whose timing repeats measured these speedups over plain runs of 7 tokens in 0.07 s."""
    plain = tuple(run("plain", 0, (0,) * 7, (0,) * 7, 0.07, prompt, tag) for _ in speedups)
    runs = tuple(run(method, k, drafted, accepted, 0.07 / s, prompt, tag, **settings) for s in speedups)
    return PairedRun(runs, plain)


def family(prompts=3):
    """Code: draft wins (1.5x), suffix 1.2x, EAGLE 0.9x. Prose: suffix wins (1.3x), draft 0.8x, EAGLE 0.7x. Suffix
    drafts 1, 3, then 1 per round (its K varies); the draft model and EAGLE 4 a round. Every run makes 7 tokens."""
    out = []
    for i in range(prompts):
        out += [
            paired("draft", 4, (1.5, 1.5), f"c{i}", "code"),
            paired("suffix", 4, (1.2, 1.2), f"c{i}", "code", drafted=(1, 3, 1), accepted=(1, 3, 0)),
            paired("eagle", 4, (0.9, 0.9), f"c{i}", "code"),
            paired("draft", 4, (0.8, 0.8), f"p{i}", "prose"),
            paired("suffix", 4, (1.3, 1.3), f"p{i}", "prose", drafted=(1, 3, 1), accepted=(1, 3, 0)),
            paired("eagle", 4, (0.7, 0.7), f"p{i}", "prose"),
        ]
    return out


def test_each_tag_ranks_its_settings_best_first_with_alpha_tau_c_and_drafts_per_round():
    rows = ranking(family(), COSTS, seed=1)
    by_tag = {tag: [r for r in rows if r["tag"] == tag] for tag in ("all", "code", "prose")}
    assert [r["tag"] for r in rows[:3]] == ["all"] * 3  # all prompts first
    assert [r["method"] for r in by_tag["code"]] == ["draft", "suffix", "eagle"]
    assert [r["method"] for r in by_tag["prose"]] == ["suffix", "draft", "eagle"]
    assert [r["method"] for r in by_tag["all"]] == ["suffix", "draft", "eagle"]  # means 1.25, 1.15, 0.80
    for tag_rows in by_tag.values():
        assert [r["rank"] for r in tag_rows] == [1, 2, 3]
        assert [r["best"] for r in tag_rows] == [True, False, False]
    code = {r["method"]: r for r in by_tag["code"]}
    assert code["draft"]["speedup"] == pytest.approx(1.5)
    assert code["draft"]["speedup_ci"] == pytest.approx((1.5, 1.5))  # every repeat of every prompt 1.5x
    assert code["draft"]["alpha"] == pytest.approx(5 / 7)  # 3 of 4 judged kept (all 4 judged), then 2 of 3
    assert code["draft"]["tau"] == pytest.approx(3.5)  # 7 tokens in 2 target passes
    assert code["draft"]["c"] == pytest.approx(0.2)  # its draft step / a target step
    assert code["eagle"]["c"] == pytest.approx(0.3)
    assert code["suffix"]["c"] == 0.0  # a lookup on the host
    assert code["draft"]["drafts_per_round"] == pytest.approx(4.0)
    assert code["suffix"]["drafts_per_round"] == pytest.approx(5 / 3)  # 1, 3, 1: its K varies
    assert code["suffix"]["tau"] == pytest.approx(7 / 3)
    assert code["draft"]["setting"] == "draft model, K = 4"
    assert ranking(family(), COSTS, seed=1) == rows  # the same seed, the same intervals


def test_the_best_of_each_tag_is_named_and_said_whether_it_beats_plain():
    lines = best_lines(ranking(family(MIN_PROMPTS), COSTS, seed=1))
    assert len(lines) == 3
    assert lines[0].startswith("Best for all prompts: Suffix decoding, K = 4 at 1.25x")
    assert lines[1].startswith("Best for prompts tagged 'code': draft model, K = 4 at 1.50x")
    assert "it beats plain decoding" in lines[1]  # every repeat 1.5x: the interval is above 1
    slow = [paired("eagle", 4, (0.9, 0.9), f"c{i}", "code") for i in range(MIN_PROMPTS)]
    every, code = best_lines(ranking(slow, COSTS))  # all prompts, and their one tag
    assert "no setting is faster than plain decoding here: decode plainly" in code
    missed = [paired("ngram", 4, (0.95,), f"c{i}", "code", drafted=(0,) * 7, accepted=(0,) * 7) for i in range(2)]
    assert "no α (nothing was drafted), τ 1.00" in best_lines(ranking(missed, COSTS))[0]  # lookups that found nothing


def test_without_measured_costs_c_is_unknown_and_without_plain_runs_the_order_is_by_tau():
    rows = ranking(family(), None)
    assert all(r["c"] is None and r["c_note"] == "not measured" for r in rows if r["method"] != "suffix")
    assert all(r["c"] == 0.0 and r["c_note"] == "" for r in rows if r["method"] == "suffix")  # a lookup: 0, always
    served = [PairedRun(p.runs) for p in family()]  # a server: no plain baseline, no speedup
    rows = [r for r in ranking(served, COSTS) if r["tag"] == "code"]
    assert [r["method"] for r in rows] == ["eagle", "draft", "suffix"]  # τ 3.5, 3.5 (the name breaks the tie), 2.33
    assert all(r["speedup"] is None for r in rows)
    assert best_lines(rows)[0].startswith("Best for prompts tagged 'code' by τ (speedup not measured")


def test_a_schedule_and_a_tree_are_part_of_the_setting():
    assert setting_words("draft", 4, plan="heuristic") == "draft model, K = 4, heuristic schedule"
    assert setting_words("eagle", 3, (3, 2, 1)) == "EAGLE-1 head, tree 3,2,1"
    scheduled = [paired("draft", 4, (1.1,), f"c{i}", "code", k_schedule="heuristic") for i in range(2)]
    (row, *_) = ranking(scheduled, COSTS)
    assert (row["schedule"], row["setting"]) == ("heuristic", "draft model, K = 4, heuristic schedule")
    tree = [paired("eagle", 3, (1.1,), f"c{i}", "code", tree=(2, 1, 1)) for i in range(2)]
    (row, *_) = ranking(tree, COSTS)
    assert (row["tree"], row["setting"]) == ("2,1,1", "EAGLE-1 head, tree 2,1,1")


def test_the_json_and_the_csv_carry_the_ranking():
    results = family()
    rows = ranking(results, COSTS, seed=1)
    doc = json.loads(results_json(results, RunSettings(), {"target": "t"}, COSTS, 1, None, rows))
    assert [(r["tag"], r["rank"], r["method"]) for r in doc["ranking"][:3]] == [
        ("all", 1, "suffix"),
        ("all", 2, "draft"),
        ("all", 3, "eagle"),
    ]
    assert {"speedup", "speedup_ci", "alpha", "tau", "c", "drafts_per_round", "setting"} <= doc["ranking"][0].keys()
    table = list(csv.DictReader(io.StringIO(results_csv(results, None, {"target": "t"}, rows))))
    assert list(table[0])[-len(RANK_COLUMNS) :] == list(RANK_COLUMNS)
    code_draft = next(r for r in table if (r["tag"], r["method"]) == ("code", "draft"))
    assert (code_draft["tag_rank"], code_draft["overall_rank"]) == ("1", "2")
    assert float(code_draft["c"]) == pytest.approx(0.2)
    assert float(code_draft["drafts_per_round"]) == pytest.approx(4.0)


def test_the_whole_family_is_every_chain_method_the_pair_can_run_and_says_why_not_for_the_others():
    names, left_out = methods.whole_family(True, {"eagle": "dir/eagle", "eagle3": "x", "medusa": "y", "mtp": "z"})
    assert names == list(methods.PROPOSERS)  # the bundled pair ships every head
    assert methods.TREE not in names  # a tree needs a shape
    names, left_out = methods.whole_family(False, {"eagle": "dir/eagle"}, "E too deep")
    assert names == ["ngram", "suffix", "eagle", "quantized"]  # the quantized copy needs only the target
    assert left_out[0].startswith("draft: no draft model is loaded")
    assert "eagle3: no EAGLE-3 head found beside the target (give one with --head DIR)" in left_out
    assert "medusa: no Medusa heads found beside the target (give one with --head DIR)" in left_out
    assert "early_exit: E too deep" in left_out


def test_a_method_whose_step_was_not_timed_is_ranked_with_c_unknown():
    rows = ranking(family(), replace(COSTS, draft_step_s={"draft": 0.002, "medusa": 0.001}), seed=1)
    assert next(r for r in rows if r["method"] == "eagle")["c"] is None  # EAGLE's step was not timed
    assert next(r for r in rows if r["method"] == "draft")["c"] == pytest.approx(0.2)
    assert len(rows) == 9
