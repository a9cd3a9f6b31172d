"""Suffix decoding in the engine: greedy output equals plain decoding, each round's drafts are the cache's (replayed
from the trace), K varies and can be 0, and earlier runs help later ones only through the memory the caller keeps."""

from __future__ import annotations

import pytest

from specviz.cli import main
from specviz.core.sampling import SamplingSettings
from specviz.core.settings import RunSettings
from specviz.core.suffix_tree import SuffixCache, SuffixMemory, SuffixOptions
from specviz.core.trace import Trace
from specviz.core.trace_json import trace_from_dict, trace_from_json, trace_to_dict, trace_to_json
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


@pytest.mark.parametrize("arch", ["gpt2"])  # llama: the method contract (test_method_contract.py)
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
    trace = trace_from_json(out)
    assert trace.settings.method == "suffix" and trace.settings.suffix.min_token_prob == 0.3
    code = main([*base, "--suffix-min-prob", "2"])
    _, err = capsys.readouterr()
    assert code == 2 and "suffix min token probability must be a number from 0 to 1" in err
    assert "Traceback" not in err


def replayed_matches(trace: Trace, memory: SuffixMemory | None = None) -> list[tuple]:
    """(source, matched suffix, path probabilities) the cache reports at each round's start, fed the trace."""
    cache = (memory or SuffixMemory()).cache_for(trace.settings.suffix)
    o, k = trace.settings.suffix, trace.settings.k
    request, seq, out, produced = cache.start(list(trace.prompt_ids)), list(trace.prompt_ids), [], 0
    for r in trace.rounds:
        depth = min(k, trace.settings.max_new_tokens - produced - 1)
        got = cache.speculate(request, seq, depth, o.max_spec_factor, o.max_spec_offset, o.min_token_prob)
        if depth < 1:
            out.append(("request", (), ()))
        else:
            out.append((got.source, tuple(seq[len(seq) - got.match_len :]) if got.match_len else (), got.probs))
        cache.add(request, list(r.committed))
        seq += r.committed
        produced += len(r.committed)
    return out


def test_each_round_records_its_trie_its_match_and_each_drafts_path_probability(load):
    pair = load("llama-target")
    trace = generate(pair, PROMPTS[0], SUFFIX)
    recorded = [(r.suffix.source, r.suffix.match_ids, r.suffix.probs) for r in trace.rounds]
    assert recorded == replayed_matches(trace)
    for r in trace.rounds:
        m = r.suffix
        assert len(m.probs) == len(r.positions) and m.score == pytest.approx(sum(m.probs), rel=1e-5)
        assert all(p >= SUFFIX.suffix.min_token_prob for p in m.probs)
        assert m.match_text == tuple(pair.token_texts[t] for t in m.match_ids)
        assert m.match_ids or not m.probs  # a draft grows from a match (a match may find nothing likely enough)
    assert {r.suffix.source for r in trace.rounds} == {"request"}  # no earlier outputs: only this request's trie
    again = trace_from_json(trace_to_json(trace))
    assert again == trace  # the match survives JSON


def test_a_second_run_records_drafts_from_the_earlier_outputs_trie(load):
    pair = load("llama-target")
    memory = SuffixMemory()
    generate(pair, "The quick brown fox", SUFFIX, memory=memory)
    second = generate(pair, "The quick brown fox", SUFFIX, memory=memory)
    sources = [r.suffix.source for r in second.rounds if r.proposed]
    assert "global" in sources  # the first run's output, in the session's global trie, drafted some rounds


def test_other_methods_and_older_suffix_traces_have_no_match_in_their_json(load):
    pair = load("llama-target")
    plain = generate(pair, PROMPTS[3], RunSettings(method="plain", max_new_tokens=8))
    assert all(r.suffix is None for r in plain.rounds)
    assert all("suffix" not in r for r in trace_to_dict(plain)["rounds"])
    doc = trace_to_dict(generate(pair, PROMPTS[3], SUFFIX))
    for r in doc["rounds"]:
        del r["suffix"]  # a suffix trace written before rounds recorded their match
    old = trace_from_dict(doc)
    assert all(r.suffix is None for r in old.rounds) and trace_to_dict(old) == doc


def test_a_damaged_suffix_match_is_refused_with_where_it_is(load):
    from specviz.errors import TraceFormatError

    doc = trace_to_dict(generate(load("llama-target"), PROMPTS[3], SUFFIX))
    doc["rounds"][0]["suffix"]["source"] = "elsewhere"
    with pytest.raises(TraceFormatError, match=r"rounds\[0\]\.suffix\.source"):
        trace_from_dict(doc)
    doc["rounds"][0]["suffix"].update(source="request", match_text=["a", "b", "c", "d", "e", "f", "g", "h", "i"])
    with pytest.raises(TraceFormatError, match="match_text"):
        trace_from_dict(doc)
