"""Suffix decoding in the engine: greedy output equals plain decoding, each round's drafts are the cache's (replayed
from the trace), K varies and can be 0, and earlier runs help later ones only through the memory the caller keeps."""

from __future__ import annotations

import pytest

from specviz.cli import main
from specviz.core.sampling import SamplingSettings
from specviz.core.settings import RunSettings
from specviz.core.suffix_tree import SuffixCache, SuffixMemory, SuffixOptions
from specviz.core.trace import Trace
from specviz.engine.decode import generate

PROMPTS = [
    "for item in items:\n    print(item)\nfor item in items:\n   ",
    "def add(a, b):\n    return a + b\n\ndef add(a, b):",
    "The quick brown fox",
    "a b a b a b a",
]
SUFFIX = RunSettings(method="suffix", k=6, max_new_tokens=40)


def drafted(trace: Trace) -> list[list[int]]:
    return [[pos.token_id for pos in r.positions] for r in trace.rounds]


def replayed_drafts(trace: Trace, cache: SuffixCache, options: SuffixOptions, k: int) -> list[list[int]]:
    """What the cache drafts at each round's start, fed the trace's committed tokens: the engine must match it."""
    request, seq, out = cache.start(list(trace.prompt_ids)), list(trace.prompt_ids), []
    produced = 0
    for r in trace.rounds:
        depth = min(k, trace.settings.max_new_tokens - produced - 1)
        got = cache.speculate(
            request, seq, depth, options.max_spec_factor, options.max_spec_offset, options.min_token_prob
        )
        out.append(list(got.tokens) if depth > 0 else [])
        cache.add(request, list(r.committed))
        seq += r.committed
        produced += len(r.committed)
    return out


@pytest.mark.parametrize("arch", ["llama", "gpt2"])
def test_suffix_greedy_equals_plain_on_several_prompts(load, arch):
    pair = load(f"{arch}-target")
    proposed = 0
    for prompt in PROMPTS:
        plain = generate(pair, prompt, RunSettings(method="plain", max_new_tokens=40))
        spec = generate(pair, prompt, SUFFIX)
        assert spec.output_ids == plain.output_ids
        assert spec.text == plain.text
        proposed += spec.totals.proposed
    assert proposed > 0


def test_each_rounds_drafts_are_the_caches_and_k_varies(load):
    pair = load("llama-target")
    trace = generate(pair, PROMPTS[0], SUFFIX)
    assert drafted(trace) == replayed_drafts(trace, SuffixCache(), SUFFIX.suffix, SUFFIX.k)
    lengths = {len(d) for d in drafted(trace)}
    assert 0 in lengths and len(lengths) > 2 and max(lengths) <= SUFFIX.k


def test_a_memory_carries_earlier_outputs_to_later_runs_and_only_its_own(load):
    pair = load("llama-target")
    prompt = "The quick brown fox"
    fresh = generate(pair, prompt, SUFFIX)
    memory = SuffixMemory()
    first = generate(pair, prompt, SUFFIX, memory=memory)
    second = generate(pair, prompt, SUFFIX, memory=memory)  # the global trie now holds the first run's output
    assert drafted(first) == drafted(fresh)  # an empty memory: the same drafts as no memory
    assert second.output_ids == first.output_ids
    assert second.totals.accepted > first.totals.accepted and second.totals.rounds < first.totals.rounds
    assert memory.cached_requests == 2
    assert drafted(generate(pair, prompt, SUFFIX, memory=SuffixMemory())) == drafted(fresh)  # another memory: afresh


def test_sampled_suffix_runs_are_seeded_and_stay_in_the_target_top_k(load):
    pair = load("llama-target")
    settings = RunSettings(method="suffix", k=4, max_new_tokens=30, sampling=SamplingSettings(1.0, 5), seed=3)
    one, two = generate(pair, PROMPTS[3], settings), generate(pair, PROMPTS[3], settings)
    assert one.output_ids == two.output_ids
    for r in one.rounds:
        for pos in r.positions:
            assert pos.q == 1.0 and pos.ratio == pytest.approx(min(1.0, pos.p))  # one-hot: accepted with p(x)


def test_run_method_suffix_and_its_options_on_the_command_line(model_dirs, capsys):
    base = ["run", "--prompt", PROMPTS[3], "--target", str(model_dirs["llama-target"]), "--method", "suffix"]
    code = main([*base, "--max-new-tokens", "12", "--suffix-min-prob", "0.3", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    trace = Trace.from_json(out)
    assert trace.settings.method == "suffix" and trace.settings.suffix.min_token_prob == 0.3
    code = main([*base, "--suffix-min-prob", "2"])
    _, err = capsys.readouterr()
    assert code == 2 and "suffix min token probability must be a number from 0 to 1" in err
    assert "Traceback" not in err
