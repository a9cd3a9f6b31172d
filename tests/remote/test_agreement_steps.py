"""The two engines' steps side by side (specviz.remote.agreement.side_by_side), from hand-built records: every
difference carries its reason."""

from specviz.core.record import RunRecord
from specviz.remote.agreement import AFTER_IN_LINE, BEFORE_IN_LINE, PAST_THE_LIMIT, compare, side_by_side


def record(source, drafted, accepted, committed):
    judged = tuple(a + (a < d) for d, a in zip(drafted, accepted))
    ids = tuple(range(sum(committed)))
    return RunRecord(source, "draft", 4, "p", "t", ids, committed, drafted, accepted, judged, (), 0.1)


def test_prefill_offset_then_the_same_steps_then_the_limit():
    # specviz: rounds start at tokens 0 (accepts 0: commits 1), 1 (accepts 4: commits 5), 6, 11
    local = record("specviz", (4, 4, 4, 4), (0, 4, 4, 1), (1, 5, 5, 2))
    # vLLM: the prefill commits token 0, then steps start at 1, 6 (same as specviz's), then 11 (could reach past 13)
    served = record("vllm", (0, 4, 4, 4), (0, 4, 4, 4), (1, 5, 5, 2))
    rows = {r["starts at token"]: r for r in side_by_side(served, local, 13)}
    assert rows[0]["vLLM drafted"] is None
    assert rows[0]["why not"] == BEFORE_IN_LINE  # specviz's first round alone
    assert rows[1]["same step"]
    assert rows[6]["same step"]
    assert rows[1]["why not"] == ""
    assert rows[11]["why not"] == PAST_THE_LIMIT
    assert not rows[11]["same step"]
    found = compare(served, local, 13)
    assert (found.steps, found.same, found.first_same, found.same_after_first) == (2, 2, 0, 2)


def test_a_different_step_after_lining_up_is_numerics():
    local = record("specviz", (4, 4, 4), (4, 1, 4), (5, 2, 5))
    served = record("vllm", (4, 4, 4), (4, 3, 4), (5, 4, 3))
    rows = {r["starts at token"]: r for r in side_by_side(served, local, 64)}
    assert rows[0]["same step"]
    assert rows[5]["why not"] == AFTER_IN_LINE
    assert (rows[5]["vLLM accepted"], rows[5]["specviz accepted"]) == (3, 1)


def test_compare_engines_warms_both_up_then_runs_each_prompt_on_both():
    from specviz.core.settings import RunSettings
    from specviz.measure.prompts import PromptRow
    from specviz.remote.agreement import compare_engines
    from specviz.viz.workload_charts import agreement_row, agreement_verdict

    calls = []

    def engine(source):
        def run(prompt, settings, tag):
            calls.append((source, prompt, settings.max_new_tokens, tag))
            return record(source, (4, 4, 4), (4, 4, 4), (5, 5, 3))

        return run

    rows = [PromptRow("a", "x", 1), PromptRow("b", "y", 2)]
    runs = list(compare_engines(engine("specviz"), engine("vllm"), rows, RunSettings(max_new_tokens=13)))
    assert calls[:2] == [("specviz", "a", 8, "x"), ("vllm", "a", 8, "x")]  # the warm-up: short, both engines
    assert [c[:3] for c in calls[2:]] == [(s, p, 13) for p in "ab" for s in ("specviz", "vllm")]
    assert [r.prompt for r in runs] == ["a", "b"]
    assert all(r.found.text_equal for r in runs)
    table = [agreement_row(r) for r in runs]
    assert table[0]["agree from there"] == "2/2"
    assert table[0]["_after"] == (2, 2)
    agreed, sentence = agreement_verdict(table)
    assert agreed
    assert sentence.startswith("2/2 texts equal.")


def test_the_command_lines_totals_add_up_the_prompts_step_counts_beside_their_side_by_side_steps():
    from dataclasses import asdict

    from specviz.remote.agreement import Agreement, totals

    def result(found: Agreement, speed: float) -> dict:  # one prompt's entry, as main() writes it
        speeds = {"local_tokens_per_s": speed, "served_tokens_per_s": 2 * speed}
        return {"prompt": "p", **asdict(found), **speeds, "side_by_side": [{"served": (0, 4, 2)}]}

    results = [
        result(Agreement(13, 12, 1, 12, True, None), 80.0),  # from step 1 on, all 12 agree
        result(Agreement(10, 7, None, 0, False, 5), 60.0),  # never in line: counts in steps, not after the first
    ]
    got = totals(results)
    assert (got["steps"], got["steps_same"], got["texts_equal"]) == (23, 19, 1)  # was a TypeError: steps a list
    assert (got["steps_from_first_same"], got["steps_same_from_first_same"]) == (12, 12)
    assert got["first_same_index"] == [1, None] and got["vllm_tokens_per_s_median"] == 140.0


def served_record(steps, misses, total):
    """vLLM's record as remote/vllm.py builds it: the prefill, its misses listed after it, then the drafting steps."""
    drafted = (0,) * (1 + misses) + tuple(d for d, _ in steps)
    accepted = (0,) * (1 + misses) + tuple(a for _, a in steps)
    committed = (1,) * (1 + misses) + tuple(a + 1 for _, a in steps)
    judged = tuple(a + (a < d) for d, a in zip(drafted, accepted))
    ids = tuple(range(total))
    meta = {"rounds_without_drafts": misses} if misses else {}
    return RunRecord("vllm", "ngram", 4, "p", "t", ids, committed, drafted, accepted, judged, (), 0.1, meta=meta)


def test_place_puts_the_servers_misses_where_specviz_missed():
    from specviz.remote.agreement import SAME, place

    # specviz: 0 drafts 4 accepts 0; 1 misses; 2 drafts 4 accepts 2; 5 misses; 6 drafts 4 accepts 4 (11 tokens)
    local = record("specviz", (4, 0, 4, 0, 4), (0, 0, 2, 0, 4), (1, 1, 3, 1, 5))
    # vLLM: the prefill commits token 0, then two misses it does not place, then two drafting steps
    served = served_record([(4, 2), (4, 4)], misses=2, total=11)
    placed, left = place(served, local)
    assert [(p.start, p.verdict) for p in placed] == [(2, SAME), (6, SAME)]
    assert left == 0
    found = compare(served, local, 64)  # was refused: "the server skipped drafting on some steps"
    assert (found.steps, found.same, found.not_comparable, found.first_same) == (2, 2, 0, 0)


def test_place_asks_missed_at_inside_a_specviz_round_and_takes_a_draft_there_without_it():
    from specviz.remote.agreement import NOT_COMPARABLE, SAME, place

    # specviz: 0 drafts 4 accepts 2 (tokens 0-2), 3 drafts 4 accepts 4 (3-7)
    local = record("specviz", (4, 4), (2, 4), (3, 5))
    # vLLM: prefill (token 0), a miss at token 1 (inside specviz's first round), a step at 2 accepting 0, one at 3
    served = served_record([(4, 0), (4, 4)], misses=1, total=8)
    placed, _ = place(served, local, missed_at=lambda at: at == 1)
    assert [(p.start, p.verdict) for p in placed] == [(2, NOT_COMPARABLE), (3, SAME)]
    found = compare(served, local, 64, missed_at=lambda at: at == 1)
    assert (found.steps, found.same, found.not_comparable) == (1, 1, 1)  # inside a round: not a failure
    # without missed_at nothing says token 1 was a miss: the steps are taken to start at 1 and 2, inside specviz's
    # round (not comparable, never counted the same), and the miss is left unplaced
    unknown, left = place(served, local)
    assert [(p.start, p.verdict) for p in unknown] == [(1, NOT_COMPARABLE), (2, NOT_COMPARABLE)] and left == 1
    rows = side_by_side(served, local, 64)
    assert [r["starts at token"] for r in rows if r["vLLM drafted"] is not None] == [1, 2]


def test_a_different_accepted_count_after_a_placed_miss_is_a_difference():
    from specviz.remote.agreement import DIFFERENT, NOT_COMPARABLE, place

    # specviz: 0 drafts 4 accepts 0; 1 misses; 2 drafts 4 accepts 3 (2-5); 6 drafts 4 accepts 4 (6-10)
    local = record("specviz", (4, 0, 4, 4), (0, 0, 3, 4), (1, 1, 4, 5))
    # vLLM: prefill; miss at 1; at 2 accepts 1 (another occurrence drafted); at 4 (inside specviz's round) accepts 4
    served = served_record([(4, 1), (4, 4), (2, 1)], misses=1, total=11)
    placed, _ = place(served, local)
    assert [(p.start, p.verdict) for p in placed] == [(2, DIFFERENT), (4, NOT_COMPARABLE), (9, NOT_COMPARABLE)]
    found = compare(served, local, 64)
    assert (found.steps, found.same, found.not_comparable) == (1, 0, 2)
    assert not any(r["same step"] for r in side_by_side(served, local, 64) if r["starts at token"] == 2)
