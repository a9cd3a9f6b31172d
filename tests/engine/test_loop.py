"""Stop conditions per committed token, cache rollback, determinism, and the n-gram lookup."""

import dataclasses

import pytest

from specviz.core.sampling import SamplingSettings
from specviz.core.settings import RunSettings
from specviz.engine.decode import generate
from specviz.engine.proposers import ngram_lookup

PROMPT = "class Counter:\n    def"


def test_eos_accepted_mid_round_ends_the_output_there(load):
    pair = load("llama-target", "llama-target")  # self-draft: every round accepts all K
    free = generate(pair, PROMPT, RunSettings(k=4, max_new_tokens=30, stop_at_eos=False))
    first_round = free.rounds[0].committed
    eos = first_round[1]  # the 2nd token of a 5-token round: an EOS accepted in the middle of the round
    stopped = generate(dataclasses.replace(pair, eos_ids=frozenset({eos})), PROMPT, RunSettings(k=4, max_new_tokens=30))
    assert stopped.output_ids == first_round[:2]
    last = stopped.rounds[-1]
    assert last.stop == "eos"
    assert last.extra is None
    assert [p.verdict for p in last.positions] == ["accepted", "accepted", "after_stop", "after_stop"]
    assert stopped.totals.proposed == 2
    assert stopped.totals.accepted == 2


@pytest.mark.parametrize("method, k", [("draft", 8), ("ngram", 5), ("plain", 1)])
@pytest.mark.parametrize("max_new_tokens", [1, 2, 7, 23])
def test_max_new_tokens_is_never_exceeded(load, method, k, max_new_tokens):
    pair = load("gpt2-target", "gpt2-target")
    trace = generate(pair, PROMPT, RunSettings(method=method, k=k, max_new_tokens=max_new_tokens, stop_at_eos=False))
    assert len(trace.output_ids) == max_new_tokens
    assert trace.rounds[-1].stop == "max_new_tokens"


@pytest.mark.parametrize("draft", ["llama-target", "llama-truncated", "llama-random"])
def test_caches_roll_back_to_the_committed_length(load, draft):
    pair = load("llama-target", draft)
    sampled = RunSettings(k=3, max_new_tokens=40, sampling=SamplingSettings(temperature=1.0), stop_at_eos=False)
    trace = generate(pair, PROMPT, sampled)
    committed = len(trace.prompt_ids)
    for r in trace.rounds[:-1]:
        committed += len(r.committed)
        assert r.target_cache[0] == committed - len(r.committed) + r.proposed  # pending token + K drafts were read
        assert r.target_cache[1] == committed - 1  # everything but the new token, which the next pass reads
        all_accepted = r.accepted == r.proposed
        assert r.draft_cache[1] == committed - (2 if all_accepted else 1)  # x_K was never fed to the draft


@pytest.mark.parametrize("method", ["draft", "ngram", "plain"])
def test_same_settings_and_seed_give_the_same_trace(load, method):
    pair = load("gpt2-target", "gpt2-truncated")
    settings = RunSettings(method=method, k=3, max_new_tokens=30, seed=7, sampling=SamplingSettings(1.0, top_k=40))
    first, second = generate(pair, PROMPT, settings), generate(pair, PROMPT, settings)
    assert first.without_timings() == second.without_timings()
    other_seed = generate(pair, PROMPT, dataclasses.replace(settings, seed=8))
    assert other_seed.output_ids != first.output_ids


def test_sampled_run_only_emits_tokens_inside_top_k(load):
    pair = load("llama-target", "llama-truncated")
    trace = generate(pair, PROMPT, RunSettings(k=4, max_new_tokens=60, sampling=SamplingSettings(1.5, top_k=3)))
    for r in trace.rounds:
        for pos in r.positions:
            assert len(pos.p_top) <= 3
            assert len(pos.q_top) <= 3  # p and q both processed by the same top-k
        emitted = [(pos.token_id, pos.p, pos.p_top) for pos in r.positions if pos.accepted]
        if r.extra:  # a correction is drawn from norm(max(0, p - q)), a bonus from p: either way p(x) > 0
            drawn_from = r.residual_top if r.extra.kind == "correction" else r.bonus_top
            assert r.extra.prob > 0
            emitted.append((r.extra.token_id, r.extra.p, drawn_from))
        assert [token for token, _, _ in emitted] == list(r.committed)
        for token, p, top in emitted:  # every committed token is one of the 3 tokens the processed p allows
            assert p > 0
            assert token in {t.token_id for t in top}


@pytest.mark.parametrize(
    "history, k, expected",
    [
        ([1, 2, 3, 4, 1, 2], 2, [3, 4]),  # "1 2" seen before: propose what followed
        ([1, 2, 3, 4, 1, 2], 5, [3, 4, 1, 2]),  # no longer continuation exists
        ([5, 6, 7, 9, 6, 7, 8, 6, 7], 1, [9]),  # the earliest match (vLLM's and prompt lookup's rule)
        ([5, 6, 7, 9, 6, 7, 8, 6, 7], 9, [9, 6, 7, 8, 6, 7]),  # cut where the history ends
        ([1, 2, 3], 3, []),  # nothing repeats
        ([4, 4, 4, 4], 2, [4]),  # the only earlier "4 4 4" has one token after it
        ([1, 2, 9, 8, 2], 2, [9, 8]),  # falls back to a shorter n (the bigram "8 2" is new, unigram "2" is not)
    ],
)
def test_ngram_lookup(history, k, expected):
    assert ngram_lookup(history, k, min_n=1, max_n=3) == expected


def test_a_stop_check_stops_the_decode_loop_between_rounds(load):
    """The lecture hall stops a run nobody waits for (or past its budget) at the loop's checkpoint, once a round."""
    from specviz.engine.cancel import stop_check
    from specviz.errors import SpecvizError

    pair = load("llama-target", "llama-truncated")
    settings = RunSettings(k=2, max_new_tokens=30, stop_at_eos=False)
    whole = generate(pair, PROMPT, settings)
    checks = []

    def check():
        checks.append(1)
        if len(checks) == 3:
            raise SpecvizError("stopped")

    with stop_check(check), pytest.raises(SpecvizError, match="stopped"):
        generate(pair, PROMPT, settings)
    assert len(checks) == 3 < len(whole.rounds)  # two rounds ran, the third was never started
    assert generate(pair, PROMPT, settings).output_ids == whole.output_ids  # outside the block: no check
