"""Suffix decoding's trie and cache (core/suffix_tree.py): hand-built histories whose drafts can be worked out by hand,
ArcticInference's own recorded drafts replayed, the options' messages, and one-hot rounds exact by enumeration."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from specviz.core.settings import RunSettings
from specviz.core.suffix_tree import SuffixCache, SuffixMemory, SuffixOptions, SuffixTree
from specviz.core.toy import MarkovModel, judge_with, round_outcomes, target_distribution, total_variation
from specviz.errors import SettingsError

ARCTIC = Path(__file__).parents[1] / "fixtures" / "arctic_suffix.json"


def tree_of(*tokens: int, depth: int = 24) -> SuffixTree:
    tree = SuffixTree(depth)
    tree.extend(0, tokens)
    return tree


def test_counts_are_occurrences_of_each_substring():
    tree = tree_of(1, 2, 3, 1, 2)
    assert tree.root.count == 5  # one per token
    assert tree.match([1, 2]).count == 2  # "1 2" at 0 and at the end
    assert tree.match([2, 3]).count == 1
    assert tree.match([3, 2]) is None


def test_the_best_match_drafts_what_followed_it():
    # 1 2 3 4 1 2: "1 2" occurred once before the end, followed by 3 4; count(1 2) = 2, so each step is p = 1/2.
    tree = tree_of(1, 2, 3, 4, 1, 2)
    draft = tree.speculate([1, 2, 3, 4, 1, 2], max_spec_tokens=8)  # factor 1: a 2-token match drafts at most 2
    assert draft.tokens == (3, 4) and draft.probs == (0.5, 0.5) and draft.match_len == 2
    longer = tree.speculate([1, 2, 3, 4, 1, 2], max_spec_tokens=8, max_spec_factor=2.0)
    assert longer.tokens == (3, 4, 1, 2)  # the walk continues along the one earlier occurrence
    assert tree.speculate([1, 2, 3, 4, 1, 2], max_spec_tokens=1).tokens == (3,)  # K caps it


def test_the_walk_stops_below_min_token_prob():
    # after "1": 2, 3, 4, 5 once each, and the final 1 with no successor: each child has p = 1/5
    history = [1, 2, 1, 3, 1, 4, 1, 5, 1]
    tree = tree_of(*history)
    assert tree.speculate(history, 4, min_token_prob=0.25).tokens == ()
    assert tree.speculate(history, 4, min_token_prob=0.1).tokens == (2,)  # a tie: the first child seen wins


def test_the_most_frequent_child_wins():
    history = [1, 2, 1, 3, 1, 3, 1]  # after "1": 2 once, 3 twice
    draft = tree_of(*history).speculate(history, 1)
    assert draft.tokens == (3,) and draft.probs == (0.5,)


def test_the_trie_holds_at_most_max_depth_tokens():
    history = [1, 2, 3, 4, 1, 2]
    # with depth 3 the best walk is from "2" (2 3 4 is 3 deep); with 24 it goes on along the earlier occurrence
    assert tree_of(*history, depth=3).speculate(history, 8, max_spec_factor=4.0).tokens == (3, 4)
    assert tree_of(*history, depth=24).speculate(history, 8, max_spec_factor=4.0).tokens == (3, 4, 1, 2)


def test_the_global_trie_of_earlier_outputs_wins_when_it_scores_more():
    cache = SuffixCache()
    earlier = cache.start([9, 9])
    cache.add(earlier, [5, 6, 7, 8])
    cache.stop(earlier)
    now = cache.start([0, 5, 6])  # this prompt has never seen what follows "5 6"
    draft = cache.speculate(now, [0, 5, 6], 4)
    assert draft.tokens == (7, 8) and draft.source == "global"


def test_the_requests_own_trie_wins_a_tie():
    cache = SuffixCache()
    earlier = cache.start([0])
    cache.add(earlier, [5, 6, 7, 5, 6])
    cache.stop(earlier)
    now = cache.start([5, 6, 7, 5, 6])  # its own prompt is the earlier output: equal scores
    assert cache.speculate(now, [5, 6, 7, 5, 6], 1).source == "request"


def test_max_cached_requests_forgets_the_oldest_output():
    cache = SuffixCache(max_cached_requests=1)
    first = cache.start([0])
    cache.add(first, [5, 6, 7])
    cache.stop(first)
    second = cache.start([1])  # evicts the first output
    cache.add(second, [3])
    assert cache.speculate(second, [1, 3, 5, 6], 4).tokens == ()
    assert cache.global_tree.root.count == 1


def test_a_memory_keeps_one_cache_per_depth_and_size():
    memory = SuffixMemory()
    assert memory.cache_for(SuffixOptions()) is memory.cache_for(SuffixOptions(min_token_prob=0.5))
    assert memory.cache_for(SuffixOptions()) is not memory.cache_for(SuffixOptions(max_tree_depth=8))


def replay(scenario: dict):
    cache = SuffixCache(scenario["depth"], scenario["cached"])
    for request in scenario["requests"]:
        rid, seq = cache.start(request["prompt"]), list(request["prompt"])
        for step in request["steps"]:
            mine = cache.speculate(rid, seq, step["k"], scenario["factor"], scenario["offset"], scenario["min_prob"])
            yield list(mine.tokens), mine.score, step
            cache.add(rid, step["then"])
            seq += step["then"]
        cache.stop(rid)


def test_arctic_inferences_own_drafts_are_reproduced():
    """tests/fixtures/arctic_suffix.json: drafts recorded from arctic-inference 0.1.1 (record_arctic_suffix.py) on
    random histories, several requests sharing the global trie, evictions included."""
    steps = [s for scenario in json.loads(ARCTIC.read_text()) for s in replay(scenario)]
    assert len(steps) > 1000 and sum(bool(step["draft"]) for _, _, step in steps) > 1000
    wrong = [(mine, step["draft"]) for mine, score, step in steps if mine != step["draft"]]
    assert not wrong
    assert all(abs(score - step["score"]) < 1e-6 for _, score, step in steps)


@pytest.mark.parametrize(
    "options, message",
    [
        ({"max_tree_depth": 0}, "suffix max tree depth must be a whole number from 1"),
        ({"min_token_prob": 1.5}, "suffix min token probability must be a number from 0 to 1"),
        ({"max_spec_factor": -1}, "suffix max spec factor must be a number from 0"),
        ({"max_cached_requests": -1}, "suffix max cached requests (0 = no global tree)"),
        ({"max_spec_offset": float("nan")}, "suffix max spec offset"),
    ],
)
def test_bad_options_get_a_clear_message(options, message):
    with pytest.raises(SettingsError, match=message.replace("(", r"\(").replace(")", r"\)")):
        RunSettings(method="suffix", suffix=options)


def test_options_survive_json_and_defaults_keep_the_old_settings_json():
    settings = RunSettings(method="suffix", suffix=SuffixOptions(min_token_prob=0.3, max_tree_depth=8))
    assert RunSettings.from_dict(settings.to_dict()) == settings
    assert "suffix" not in RunSettings(method="suffix").to_dict()


def test_suffix_refuses_a_tree_shape():
    with pytest.raises(SettingsError, match="Suffix decoding here proposes one path"):
        RunSettings(method="suffix", tree=(2, 1))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_suffix_round_judged_one_hot_has_the_targets_distribution(seed):
    """Drafts from the cache over a toy history (vocabulary 3), judged one-hot (accept x with p(x)): every round,
    continued by the target to K + 1 tokens, has exactly the target's distribution, whatever K the cache chose."""
    p = MarkovModel.random(3, torch.Generator().manual_seed(seed), sharpness=1.5)
    g = torch.Generator().manual_seed(100 + seed)
    history = tuple(int(x) for x in torch.randint(0, 3, (30,), generator=g))
    cache = SuffixCache()
    rid = cache.start(history)
    lengths = set()
    for cut in range(8, 30, 3):
        context = history[:cut]
        draft = cache.speculate(rid, context, 4, min_token_prob=0.0).tokens
        lengths.add(len(draft))

        def q(ctx, draft=draft, start=cut):
            return torch.nn.functional.one_hot(torch.tensor(draft[len(ctx) - start]), 3).double()

        outcomes = round_outcomes(p, q, context, len(draft), judge_with())
        spec: dict = {}
        for tokens, prob in outcomes.items():
            for rest, rest_prob in target_distribution(p, context + tokens, len(draft) + 1 - len(tokens)).items():
                spec[tokens + rest] = spec.get(tokens + rest, 0.0) + prob * rest_prob
        assert total_variation(spec, target_distribution(p, context, len(draft) + 1)) < 1e-12
    assert len(lengths) > 1  # K varied from round to round
