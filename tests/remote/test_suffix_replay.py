"""Placing vLLM's suffix decoding steps (specviz/remote/suffix_replay.py) on hand-built greedy outputs: the prefill's
token first, then each step's draft from the cache, accepted up to its first token that differs from the output; steps
that drafted nothing are placed too, and left out of what vLLM's metrics would report."""

from specviz.core.suffix_tree import SuffixCache, SuffixOptions
from specviz.remote.suffix_replay import drafting_steps, replay_vllm_suffix


def test_a_step_drafts_from_the_prompt_plus_the_prefill_token():
    # prompt 1 2 3 1 2, the prefill commits 3: "1 2 3" occurred before, followed by 1 2 3 (p = 1/2 each: the
    # match also ends the text), so the step drafts 1 2 3; the output goes on 1 2 3 9: all 3 accepted, 9 the bonus
    steps = replay_vllm_suffix(SuffixCache(), [1, 2, 3, 1, 2], [3, 1, 2, 3, 9], 4, SuffixOptions(), 256)
    assert steps == [(1, 3, 3)]
    assert drafting_steps(steps) == ([3], [3])


def test_steps_without_a_draft_are_placed_and_not_reported():
    steps = replay_vllm_suffix(SuffixCache(), [1, 2, 3], [7, 8, 9], 4, SuffixOptions(), 256)
    assert steps == [(1, 0, 0), (2, 0, 0)]  # nothing follows 7 or 8 anywhere: the target decodes one token each
    assert drafting_steps(steps) == ([], [])


def test_the_next_request_drafts_from_the_earlier_output():
    cache = SuffixCache()
    replay_vllm_suffix(cache, [1], [5, 6, 7, 8], 4, SuffixOptions(), 256)
    steps = replay_vllm_suffix(cache, [0, 5], [6, 7, 8], 4, SuffixOptions(), 256)
    # the prefill commits 6; only the global tree has seen "5 6" (in the earlier output): a 2-token match drafts 7 8,
    # both accepted, and that is the whole output
    assert steps == [(1, 2, 2)]
    assert drafting_steps(steps) == ([2], [2])
