"""The contract every in-process method keeps, driven by the registry (specviz.methods.ENGINE_METHODS), so a new
method is checked the day it is registered: on the tiny test pair its greedy output is the target's plain greedy output
token for token, its trace carries the fields the pages and the JSON read, its draft step cost can be measured, and
(slow) its sampled first tokens follow the target's distribution (χ²).

The per-method files keep what is particular to each method (its acceptance with known drafts, its options, its
refusals); the bundled and real pairs' greedy checks stay in them as slow tests.
"""

from __future__ import annotations

from collections import Counter

import pytest
import torch

from specviz import methods
from specviz.core.chisq import chi2_goodness_of_fit
from specviz.core.sampling import SamplingSettings, logits_to_probs
from specviz.core.settings import RunSettings
from specviz.core.trace_json import trace_from_json, trace_to_json
from specviz.engine.costs import measure_costs, timing_options
from specviz.engine.decode import encode_prompt, generate
from specviz.engine.loading.models import load_pair
from specviz.measure.predict import draft_step_cost

PROMPTS = ("def add(a, b):\n    return", "for item in items:\n    print(item)\nfor item in items:\n   ")
MAX_NEW = 24
EXIT_LAYER = 1  # early exit on the 3-layer test target: its first layer drafts
SHAPE = (2, 2, 1)  # the tree method's shape (it runs only with one)


def settings_for(method: str, **extra) -> RunSettings:
    """A run of `method` at K = 3 (a shaped method with SHAPE), every token made (no stop at EOS)."""
    shaped = {"tree": SHAPE} if methods.get(method).shaped else {}
    exit_layer = {"exit_layer": EXIT_LAYER} if methods.get(method).draft_cost == methods.EXIT_LAYERS_STEP else {}
    return RunSettings(method=method, k=3, max_new_tokens=MAX_NEW, stop_at_eos=False, **shaped, **exit_layer, **extra)


@pytest.fixture(scope="module")
def pairs(load, model_dirs):
    """pair(method) -> the tiny pair it runs on: the llama target with its truncated copy as draft (the random EAGLE-1,
    EAGLE-3, Medusa and MTP heads beside it), or with a draft of another tokenizer for the crossing methods."""
    crossing = {}

    def _pair(method: str):
        if methods.get(method).crosses:
            if not crossing:
                target, draft = model_dirs["llama-target"], model_dirs["other-vocab"]
                crossing["pair"] = load_pair(str(target), str(draft), device="cpu", cross_vocab=True)
            return crossing["pair"]
        return load("llama-target", "llama-truncated")

    return _pair


@pytest.fixture(scope="module")
def plain_runs(load):
    """The target's plain greedy trace of each prompt, computed once."""
    target = load("llama-target")
    return {p: generate(target, p, settings_for(methods.PLAIN)) for p in PROMPTS}


def test_the_registry_lists_every_in_process_method_once():
    assert len(set(methods.ENGINE_METHODS)) == len(methods.ENGINE_METHODS)
    assert methods.PLAIN in methods.ENGINE_METHODS
    assert set(methods.PROPOSERS) | set(methods.SHAPED) | set(methods.CROSSING) <= set(methods.ENGINE_METHODS)


@pytest.mark.parametrize("method", methods.ENGINE_METHODS)
def test_greedy_output_is_the_targets_plain_greedy_output(pairs, plain_runs, method):
    pair = pairs(method)
    for prompt, plain in plain_runs.items():
        run = generate(pair, prompt, settings_for(method))
        assert run.output_ids == plain.output_ids, prompt
        assert run.text == plain.text


@pytest.mark.parametrize("method", methods.ENGINE_METHODS)
def test_the_trace_carries_its_rounds_totals_and_settings_and_survives_json(pairs, method):
    run = generate(pairs(method), PROMPTS[1], settings_for(method))
    assert run.settings.method == method
    assert len(run.output_ids) == run.totals.committed == MAX_NEW
    assert run.totals.rounds == len(run.rounds) > 0
    assert [t for t, _, _ in run.tokens()] == list(run.output_ids)  # each token's origin is recorded
    assert run.totals.accepted <= run.totals.proposed
    if method == methods.PLAIN:
        assert run.totals.proposed == 0 and run.totals.alpha is None
    else:
        assert run.totals.proposed > 0  # it drafted
        assert 0.0 <= run.totals.alpha <= 1.0
    assert run.meta["target"]
    assert trace_to_json(trace_from_json(trace_to_json(run))) == trace_to_json(run)


@pytest.mark.parametrize("method", [m for m in methods.ENGINE_METHODS if not methods.get(m).crosses])
def test_its_draft_step_cost_is_measured_or_known(pairs, method):
    entry = methods.get(method)
    pair = pairs(method)
    costs = measure_costs(pair, k_max=3, repeats=1, **timing_options(method, EXIT_LAYER))
    assert costs.target_step_s > 0 and len(costs.verify_s) == 3
    c = draft_step_cost(entry, costs, EXIT_LAYER)
    if entry.draft_cost in (methods.NO_DRAFTS, methods.HOST_LOOKUP):
        assert c in (None, 0.0)  # nothing drafted, or a lookup on the host
    else:
        assert c is not None and c > 0, method  # a forward the calculator prices


def first_token_counts(pair, prompt: str, method: str, n: int) -> tuple[Counter, int]:
    """The first output token of n sampled runs (seeds 0..n-1) at temperature 1, and the drafts judged in all: each
    run makes 1 + K tokens, so its first round drafts (a lookup, where the prompt repeats itself)."""
    sampled = settings_for(method, sampling=SamplingSettings(temperature=1.0))
    counts: Counter = Counter()
    judged = 0
    for seed in range(n):
        run = generate(pair, prompt, RunSettings(**{**sampled.__dict__, "seed": seed, "max_new_tokens": 1 + 3}))
        counts[run.output_ids[0]] += 1
        judged += run.totals.judged
    return counts, judged


@pytest.mark.slow
@pytest.mark.prepush  # exactness under sampling, for every method, before a push
@pytest.mark.parametrize("method", methods.ENGINE_METHODS)
def test_sampled_first_tokens_follow_the_targets_distribution(pairs, method):
    pair = pairs(method)
    prompt = PROMPTS[1]  # it repeats itself: the lookups find drafts too
    ids = torch.tensor([encode_prompt(pair, prompt)])
    with torch.inference_mode():
        logits = pair.target(input_ids=ids).logits[0, -1, : pair.vocab_size]
    p = logits_to_probs(logits, SamplingSettings(temperature=1.0)).double()
    n = 200
    counts, judged = first_token_counts(pair, prompt, method, n)
    assert (judged == 0) == (method == methods.PLAIN)  # the first token was a judged draft's verdict, not a given
    observed = torch.tensor([counts.get(i, 0) for i in range(pair.vocab_size)], dtype=torch.float64)
    result = chi2_goodness_of_fit(observed, p)
    assert result.p_value > 1e-3, (method, result)  # a wrong sampler fails by orders of magnitude at n = 200
