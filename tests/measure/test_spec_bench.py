"""Spec-Bench as a workload (issue #38): its rows parsed, the bundled file's categories, the sample per category, the
category filter, Spearman's ρ, the comparison with the published table and the prefill apart from decoding."""

import json

import pytest

from specviz.core.record import ENGINE, RunRecord
from specviz.core.settings import RunSettings
from specviz.measure.prompts import WORKLOADS_DIR, WorkloadError, parse_workload, read_workload, workload_path
from specviz.measure.spec_bench import (
    CATEGORIES,
    Published,
    is_spec_bench,
    prefill_split,
    profile_agreement,
    published_tables,
    ranking_agreement,
    sample_per_category,
    second_turn_prompt,
    select_categories,
    spearman,
)
from specviz.measure.workload import PairedRun, runnable_rows

ROWS = "\n".join(
    json.dumps(r)
    for r in [
        {"question_id": 81, "category": "writing", "turns": ["Write a poem.", "Now shorter."]},
        {"question_id": 82, "category": "coding", "turns": ["Sort a list.", "In C."]},
        {"question_id": 321, "category": "qa", "turns": ["Who wrote Faust?"], "reference": ["Goethe"]},
        {"question_id": 322, "category": "qa", "turns": ["Who wrote Hamlet?"]},
        {"question_id": 323, "category": "qa", "turns": ["Who wrote Ulysses?"]},
        {"question_id": 401, "category": "math_reasoning", "turns": ["2 + 2?"]},
    ]
)


def rows():
    return parse_workload(ROWS, "question.jsonl").rows


def test_a_spec_bench_row_is_read_by_its_first_turn_tagged_by_its_category():
    first, second, qa = rows()[:3]
    assert (first.prompt, first.tag, first.category, first.row_id) == ("Write a poem.", "mt_bench", "writing", "81")
    assert first.turns == ("Write a poem.", "Now shorter.")
    assert second.tag == "mt_bench"  # MT-bench's subcategories are one category, as Spec-Bench's speed.py groups them
    assert (qa.tag, qa.where) == ("qa", "question 321")
    assert is_spec_bench(rows())
    assert not is_spec_bench(parse_workload('{"prompt": "x"}', "a.jsonl").rows)


def test_a_spec_bench_row_without_turns_is_reported_with_its_line():
    workload = parse_workload('{"question_id": 1, "category": "qa", "turns": []}\n' + ROWS, "q.jsonl")
    assert workload.problems == ('line 1: "turns" must be a list of non-empty strings (a Spec-Bench row)',)


def test_the_bundled_file_holds_the_four_categories_that_may_be_bundled():
    workload = read_workload("spec-bench")
    counts = {c: sum(r.tag == c for r in workload.rows) for c in CATEGORIES}
    assert counts == {"mt_bench": 80, "translation": 0, "summarization": 0, "qa": 80, "math_reasoning": 80, "rag": 80}
    assert not workload.problems
    lines = (WORKLOADS_DIR / "spec-bench.jsonl").read_text(encoding="utf-8").splitlines()
    keys = {frozenset(json.loads(line)) for line in lines}
    assert keys <= {
        frozenset({"question_id", "category", "turns"}),
        frozenset({"question_id", "category", "turns", "reference"}),
    }
    assert all(len(r.turns) == 2 for r in workload.rows if r.tag == "mt_bench")
    assert (WORKLOADS_DIR / "spec-bench.NOTICE.md").exists()


def test_a_bundled_workload_is_found_by_name_and_an_unknown_name_is_refused():
    assert workload_path("spec-bench") == WORKLOADS_DIR / "spec-bench.jsonl"
    assert workload_path("Code") == WORKLOADS_DIR / "code.jsonl"
    with pytest.raises(WorkloadError, match="No workload named 'spec_bench'.*spec-bench, code"):
        workload_path("spec_bench")


def test_the_sample_per_category_is_fixed_by_the_seed_and_keeps_the_files_order():
    all_rows = read_workload("spec-bench").rows
    sample = sample_per_category(all_rows, 5, seed=0)
    assert {c: sum(r.tag == c for r in sample) for c in ("mt_bench", "qa", "math_reasoning", "rag")} == dict.fromkeys(
        ("mt_bench", "qa", "math_reasoning", "rag"), 5
    )
    assert sample == sample_per_category(all_rows, 5, seed=0)  # same seed, same rows
    assert sample != sample_per_category(all_rows, 5, seed=1)
    ids = [int(r.row_id) for r in sample]
    assert ids == sorted(ids)  # in the file's order
    assert sample_per_category(rows(), 10, seed=0) == list(rows())  # fewer rows than asked: all of them
    assert sample_per_category(rows(), 0, seed=0) == list(rows())  # 0: every row
    with pytest.raises(WorkloadError, match="--per-category must be 0"):
        sample_per_category(rows(), -1, seed=0)


def test_the_category_filter_takes_categories_and_subcategories_and_refuses_one_that_matches_nothing():
    assert [r.row_id for r in select_categories(rows(), ["qa"])] == ["321", "322", "323"]
    assert [r.row_id for r in select_categories(rows(), ["coding", "math_reasoning"])] == ["82", "401"]
    with pytest.raises(WorkloadError) as caught:
        select_categories(rows(), ["translation"])
    assert str(caught.value) == (
        "--category 'translation' matches no row; this workload's categories: mt_bench, qa, math_reasoning "
        "(MT-bench's: writing, coding)."
    )


def test_a_second_turn_without_a_chat_template_reads_first_answer_second():
    assert second_turn_prompt("Write a poem.", " Roses are red.\n", "Now shorter.") == (
        "Write a poem.\n\nRoses are red.\n\nNow shorter."
    )


def test_spearman_matches_hand_computed_values():
    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    # ranks x: 1 2 3 4 5, y: 2 1 4 3 5 -> d² = 1+1+1+1+0 = 4, ρ = 1 - 6·4 / (5·24) = 0.8
    assert spearman([1, 2, 3, 4, 5], [2, 1, 4, 3, 5]) == pytest.approx(0.8)
    # a tie shares the mean rank: y ranks 1.5 1.5 3 -> Pearson on ranks
    assert spearman([1, 2, 3], [5, 5, 9]) == pytest.approx(0.8660254)
    assert spearman([1, 2, 3], [7, 7, 7]) is None  # a constant side has no order
    assert spearman([1], [2]) is None


def ranked_row(tag, method, speedup, rank):
    return {"tag": tag, "method": method, "speedup": speedup, "rank": rank, "best": rank == 1, "k": 4}


TABLE = Published(
    "t",
    "Vicuna-7B-v1.3",
    "RTX 3090",
    "2025-04-22",
    "src",
    {
        "PLD": {"mt_bench": 1.64, "translation": 1.15, "summarization": 2.46, "qa": 1.28},
        "SpS": {"mt_bench": 1.94, "translation": 1.37, "summarization": 1.96, "qa": 1.86},
        "Lookahead": {"mt_bench": 1.17},
    },
    {},
)


def test_a_methods_category_profile_is_compared_by_spearman_across_the_shared_categories():
    ranked = [
        ranked_row("all", "ngram", 1.3, 1),
        ranked_row("summarization", "ngram", 2.0, 1),  # best here and there
        ranked_row("mt_bench", "ngram", 1.2, 1),
        ranked_row("qa", "ngram", 1.1, 2),
        ranked_row("translation", "ngram", 0.9, 2),  # worst here and there
        ranked_row("qa", "suffix", 1.2, 1),  # no published counterpart: not compared
    ]
    (entry,) = profile_agreement(ranked, TABLE)
    assert entry["method"] == "ngram" and entry["published_method"] == "PLD"
    assert entry["categories"] == ["mt_bench", "translation", "summarization", "qa"]
    assert entry["rho"] == pytest.approx(1.0)
    assert (entry["measured_best"], entry["published_worst"]) == ("summarization", "translation")


def test_two_shared_categories_give_no_rho_and_the_ranking_is_compared_within_a_category():
    ranked = [ranked_row("qa", "ngram", 1.5, 1), ranked_row("qa", "draft", 1.2, 2), ranked_row("rag", "ngram", 1.1, 1)]
    profiles = {e["method"]: e for e in profile_agreement(ranked, TABLE)}
    assert profiles["ngram"]["rho"] is None  # qa alone is shared (rag is not in this table): below 3 categories
    (qa,) = ranking_agreement(ranked, TABLE)
    assert qa["methods"] == ["ngram", "draft"]
    assert qa["rho"] == pytest.approx(-1.0)  # here n-gram leads; published, the draft model does (1.86 > 1.28)
    assert (qa["measured_best"], qa["published_best"]) == ("ngram", "draft")


def test_the_published_table_is_copied_from_spec_benchs_leaderboard():
    tables = published_tables()
    first = tables[0]
    assert (first.model, first.date) == ("Vicuna-7B-v1.3", "2025-04-22")
    assert "3090" in first.gpu
    assert first.speedups["PLD"]["summarization"] == 2.46 and first.speedups["PLD"]["translation"] == 1.15
    assert first.speedups["EAGLE2"]["overall"] == 2.19 and first.tau["EAGLE2"] == 4.35
    assert first.speedups["Lookahead"]["overall"] == 1.13 and first.speedups["Medusa"]["overall"] == 1.44
    assert [t.model for t in tables] == ["Vicuna-7B-v1.3", "Vicuna-7B-v1.3", "Vicuna-13B-v1.3", "Vicuna-33B-v1.3"]
    for table in tables:
        assert all(set(CATEGORIES) | {"overall"} == set(v) for v in table.speedups.values())


def record(method, tag, prompt, wall_s, draft_ms, verify_ms, committed):
    return RunRecord(
        source=ENGINE,
        method=method,
        k=4,
        prompt=prompt,
        text="",
        output_ids=(),
        per_round_committed=(committed,),
        per_round_drafted=(4,),
        per_round_accepted=(committed - 1,),
        per_round_judged=(4,),
        round_end_s=(wall_s,),
        wall_s=wall_s,
        draft_ms=draft_ms,
        verify_ms=verify_ms,
        tag=tag,
    )


def test_prefill_is_the_time_before_the_rounds_and_decoding_is_timed_without_it():
    plain = record("plain", "rag", "x" * 3000, 2.0, 0.0, 1000.0, 10)  # 1 s of rounds: 1 s prefill, 10 tokens/s
    ngram = record("ngram", "rag", "x" * 3000, 1.5, 100.0, 400.0, 10)  # 0.5 s of rounds: 1 s prefill, 20 tokens/s
    split = prefill_split([PairedRun((ngram,), (plain,))])
    by_method = {row["method"]: row for row in split}
    assert by_method["plain"]["prefill_s"] == pytest.approx(1.0)
    assert by_method["plain"]["decode_tokens_per_s"] == pytest.approx(10.0)
    assert by_method["ngram"]["prefill_s"] == pytest.approx(1.0)
    assert by_method["ngram"]["decode_tokens_per_s"] == pytest.approx(20.0)
    assert by_method["ngram"]["prompt_chars"] == 3000


def test_a_row_too_long_for_the_context_is_reported_by_its_question_id_and_the_rest_kept(load):
    pair = load("llama-target")  # context of 256 tokens
    long_row = json.dumps({"question_id": 481, "category": "rag", "turns": ["word " * 400]})
    workload = parse_workload(ROWS + "\n" + long_row, "q.jsonl")
    kept, skipped = runnable_rows(pair, workload.rows, [RunSettings(max_new_tokens=8)])
    assert len(kept) == 6
    assert len(skipped) == 1 and skipped[0].startswith("question 481: ")
    assert "context of 256 tokens" in skipped[0]
