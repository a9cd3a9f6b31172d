"""Where vLLM's suffix decoding steps began, recovered by replaying vLLM's own calls on the served output.

vLLM's per-request metrics list only the verify steps that drafted (`per_step_drafted`, `per_step_accepted`): a step
whose suffix lookup found nothing is left out, so the lists alone do not say at which token each step started, and
its mean acceptance length counts tokens per *drafting* step, not per target pass (specviz counts every pass). With
greedy decoding the steps follow from the output: vLLM 0.32's `SuffixDecodingProposer` starts a request in its
`SuffixDecodingCache` after the prefill has committed the first token, adds each step's committed tokens, and asks
for min(K, max_model_len - tokens - 1) tokens continuing the last max_tree_depth tokens; a draft is accepted up to
its first token that differs from the output. This replays exactly that with specviz's cache (core/suffix_tree.py,
the same drafts as arctic-inference's).
"""

from __future__ import annotations

from collections.abc import Sequence

from specviz.core.suffix_tree import SuffixCache, SuffixOptions


def replay_vllm_suffix(
    cache: SuffixCache,
    prompt_ids: Sequence[int],
    output_ids: Sequence[int],
    k: int,
    options: SuffixOptions,
    max_model_len: int,
) -> list[tuple[int, int, int]]:
    """(first output token index, drafted, accepted) of every verify step vLLM took for this greedy output, steps
    without a draft included; the cache then holds the output as vLLM's global tree does, for the next request."""
    output = list(output_ids)
    if not output:
        return []
    request = cache.start(list(prompt_ids))
    tokens = [*prompt_ids, output[0]]  # the prefill committed one token before any draft
    cache.add(request, output[:1])
    steps, at = [], 1
    while at < len(output):
        budget = min(k, max_model_len - len(tokens) - 1)
        o = options
        draft = cache.speculate(request, tokens, budget, o.max_spec_factor, o.max_spec_offset, o.min_token_prob).tokens
        accepted = 0
        while accepted < len(draft) and at + accepted < len(output) and draft[accepted] == output[at + accepted]:
            accepted += 1
        steps.append((at, len(draft), accepted))
        new = output[at : at + accepted + 1]
        cache.add(request, new)
        tokens += new
        at += len(new)
    cache.stop(request)
    return steps


def drafting_steps(steps: Sequence[tuple[int, int, int]]) -> tuple[list[int], list[int]]:
    """What vLLM's per-request metrics report of these steps: drafted and accepted counts of the steps that drafted."""
    kept = [(d, a) for _, d, a in steps if d]
    return [d for d, _ in kept], [a for _, a in kept]
