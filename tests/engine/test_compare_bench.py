"""Hugging Face lanes agree with specviz under greedy decoding; the benchmark JSON has its documented shape."""

import json

import pytest

from specviz.core.settings import RunSettings
from specviz.engine.compare import hf_generate
from specviz.engine.decode import encode_prompt, generate
from specviz.measure.bench import results_table, run_bench
from specviz.methods import LANES

PROMPT = "for item in items:\n    print(item)\nfor item in items:\n"


GREEDY = RunSettings(method="plain", k=3, max_new_tokens=24)


@pytest.fixture(scope="module")
def specviz_greedy(load):
    """specviz_greedy(arch) -> specviz's plain greedy output ids for PROMPT, computed once per architecture."""
    cache = {}

    def _greedy(arch):
        if arch not in cache:
            cache[arch] = generate(load(f"{arch}-target", f"{arch}-truncated"), PROMPT, GREEDY).output_ids
        return cache[arch]

    return _greedy


@pytest.mark.parametrize("arch", ["llama", "gpt2"])
@pytest.mark.parametrize("lane", ["plain", "hf_assisted", "hf_prompt_lookup"])
def test_hf_lanes_equal_specviz_greedy(load, specviz_greedy, arch, lane):
    pair = load(f"{arch}-target", f"{arch}-truncated")
    theirs = hf_generate(pair, encode_prompt(pair, PROMPT), GREEDY, lane)
    assert theirs.output_ids == specviz_greedy(arch)
    assert theirs.tokens_per_s > 0


def test_bench_json_has_every_lane_and_the_documented_fields(load):
    pair = load("llama-target", "llama-truncated")
    settings = RunSettings(max_new_tokens=8, exit_layer=2)  # early exit's E: the tiny target has 3 layers
    doc = run_bench(pair, [PROMPT, "def add(a, b):"], [1, 2], settings, repeats=1)
    doc = json.loads(json.dumps(doc))  # it is plain JSON
    assert {"device", "dtype", "cores", "cpu", "cpu_capability", "torch", "transformers", "python"} <= doc[
        "environment"
    ].keys()
    results = {(r["method"], r["k"]): r for r in doc["results"]}
    assert set(results) == {("plain", 0)} | {(lane, k) for lane in LANES[1:] for k in (1, 2)}
    for r in doc["results"]:
        for key in (
            "method",
            "k",
            "tokens_per_s",
            "speedup_vs_plain",
            "alpha",
            "tau",
            "c",
            "verify_cost",
            "predicted_speedup",
            "efficiency",
        ):
            assert key in r
        assert r["identical_to_plain"]
        assert r["runs"] == 2
    draft = results[("draft", 2)]
    assert 0 <= draft["alpha"] <= 1
    if doc["costs"]["implausible"]:  # a busy machine's timings: no prediction is built on them, and the JSON says why
        assert draft["c"] is None
        assert draft["efficiency"] is None
    else:
        assert draft["c"] > 0
        assert draft["efficiency"] > 0
    assisted = results[("hf_assisted", 2)]
    assert assisted["alpha"] is None  # generate() does not report its acceptances: not copied from specviz's lane
    # tau measured from its own target passes (streamer chunks): close to ours, as greedy acceptances are the same,
    # but not copied (generate() counts its prefill step as a pass of one token)
    assert 1 < assisted["tau"] <= draft["tau"]
    if doc["costs"]["implausible"]:
        assert assisted["predicted_speedup"] is None
    else:
        assert assisted["predicted_speedup"] > 0
    assert results[("hf_prompt_lookup", 2)]["predicted_speedup"] is None
    assert results_table(doc).count("\n") == 2 + len(doc["results"]) - 1


def test_an_ngram_only_bench_still_measures_the_verify_cost(load):
    pair = load("llama-target")  # no draft model at all
    doc = run_bench(pair, [PROMPT], [2], RunSettings(max_new_tokens=8), lanes=("plain", "ngram"))
    assert doc["costs"]["c"] is None
    assert doc["costs"]["draft_step_ms"] is None
    ngram = next(r for r in doc["results"] if r["method"] == "ngram")
    if doc["costs"]["implausible"]:  # a busy machine timed a verify pass below a step: no prediction, and it says why
        assert ngram["predicted_speedup"] is None
        assert ngram["efficiency"] is None
        return
    assert ngram["c"] == 0.0
    assert ngram["verify_cost"] > 0
    assert ngram["predicted_speedup"] > 0
    assert ngram["efficiency"] > 0
    assert 0 <= ngram["acceptance_rate"] <= ngram["alpha"] <= 1  # judged <= proposed


@pytest.mark.parametrize("k", [1, 3])
def test_hf_assisted_drafts_exactly_k_a_round_and_leaves_the_shared_draft_alone(load, k):
    """transformers reads K, the schedule and the early-exit threshold from the assistant's own generation_config:
    passed to generate() they were silently ignored (every K ran the same heuristic schedule)."""
    from specviz.measure.lanes import run_method

    pair = load("llama-target", "llama-truncated")
    before = pair.draft.generation_config.to_dict()
    settings = RunSettings(k=k, max_new_tokens=16, stop_at_eos=False)
    theirs = run_method(pair, PROMPT, settings, "hf_assisted")
    ours = run_method(pair, PROMPT, settings, "draft")
    assert theirs.output_ids == ours.output_ids
    assert theirs.per_round_committed == ours.per_round_committed  # same rounds: K drafts each, same acceptances
    assert pair.draft.generation_config.to_dict() == before  # the cached model is shared: never modified
