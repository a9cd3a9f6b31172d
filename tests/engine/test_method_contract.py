"""The contract every in-process method keeps, driven by the registry (specviz.methods.ENGINE_METHODS), so a new
method is checked the day it is registered: on the tiny test pair its greedy output is the target's plain greedy output
token for token, its trace carries the fields the pages and the JSON read, its draft step cost can be measured, and
(slow) its sampled first tokens follow the target's distribution (χ²).

Its class is the one description of what it can do (engine/proposers/base.py Proposer: chains, trees, dynamic trees,
adaptive K, the verifiers): every capability the registry and the settings offer (the sidebar and the CLI build their
runs through RunSettings) is declared on the class, is really done when asked (a dynamic tree run's rounds are
dynamic trees, a block-verified run is judged by block verification, an adaptive run's drafter stops on its
confidence), and every one it does not declare is refused.

The per-method files keep what is particular to each method (its acceptance with known drafts, its options, its
refusals); the bundled and real pairs' greedy checks stay in them as slow tests.
"""

from __future__ import annotations

from collections import Counter

import pytest
import torch

from specviz import methods
from specviz.core import schedule
from specviz.core.chisq import chi2_goodness_of_fit
from specviz.core.dyntree import DynamicTree
from specviz.core.sampling import SamplingSettings, logits_to_probs
from specviz.core.settings import RunSettings
from specviz.core.trace_json import trace_from_json, trace_to_json
from specviz.core.verify import BLOCK, TOKEN
from specviz.engine import decode
from specviz.engine.costs import measure_costs, timing_options
from specviz.engine.decode import encode_prompt, generate
from specviz.engine.loading.models import load_pair
from specviz.engine.proposers import Proposer, proposer_class
from specviz.errors import SettingsError
from specviz.measure.predict import draft_step_cost

PROMPTS = ("def add(a, b):\n    return", "for item in items:\n    print(item)\nfor item in items:\n   ")
MAX_NEW = 24
EXIT_LAYER = 1  # early exit on the 3-layer test target: its first layer drafts
SHAPE = (2, 2, 1)  # the tree method's shape (it runs only with one)
DYNAMIC = DynamicTree(budget=6, depth=3, topk=2)  # a small dynamic (EAGLE-2) tree
SPECULATIVE = tuple(m for m in methods.ENGINE_METHODS if methods.get(m).speculative)  # the methods with a class


def settings_for(method: str, **extra) -> RunSettings:
    """A run of `method` at K = 3 (a shaped method with SHAPE unless given a tree), every token made (no stop at
    EOS)."""
    given_tree = "tree" in extra or "dynamic" in extra
    shaped = {"tree": SHAPE} if methods.get(method).shaped and not given_tree else {}
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


def offers(method: str, **options) -> bool:
    """Whether the settings (what the sidebar and the CLI build every run through) accept `method` with these
    options."""
    try:
        settings_for(method, **options)
    except SettingsError:
        return False
    return True


@pytest.mark.parametrize("method", SPECULATIVE)
def test_what_the_registry_and_the_settings_offer_is_what_the_class_declares(method):
    cls, entry = proposer_class(method), methods.get(method)
    assert cls.chains == (not entry.shaped) == offers(method, tree=())
    assert cls.trees == entry.takes_tree == offers(method, tree=SHAPE) == (method in methods.SHAPED + methods.BRANCHING)
    assert cls.dynamic_trees == (method in methods.GROWS_DYNAMIC) == offers(method, dynamic=DYNAMIC)
    assert cls.adaptive == entry.adaptive == offers(method, k_schedule=schedule.CONFIDENCE)
    assert TOKEN in cls.verifiers and (BLOCK in cls.verifiers) == offers(method, verifier=BLOCK)
    assert cls.shares_target == entry.exits_early  # the target's forward: decode.target_forward and forwards_run
    assert bool(cls.hidden_layers) == entry.loads_head  # the feature heads read the target's features, no other
    own_step = entry.timed_as == method and entry.draft_cost != methods.DRAFT_MODEL_STEP  # costs.py times its probe
    assert (cls.cost_probe.__func__ is not Proposer.cost_probe.__func__) == own_step  # a probe of its own


@pytest.mark.parametrize("method", [m for m in SPECULATIVE if not methods.get(m).takes_tree])
def test_a_method_that_declares_no_trees_refuses_them(method):
    with pytest.raises(SettingsError):
        settings_for(method, tree=SHAPE)
    with pytest.raises(SettingsError):
        settings_for(method, dynamic=DYNAMIC)


@pytest.mark.parametrize("method", [m for m in SPECULATIVE if methods.get(m).takes_tree])
def test_a_method_that_declares_trees_drafts_the_static_tree_asked_for(pairs, plain_runs, method):
    run = generate(pairs(method), PROMPTS[1], settings_for(method, tree=SHAPE))
    drafting = [r for r in run.rounds if r.proposed]
    assert drafting and all(r.is_tree and not r.scored for r in drafting)  # static trees, not chains
    assert max(len(r.nodes) for r in drafting) > len(SHAPE)  # some round drafted siblings
    assert run.output_ids == plain_runs[PROMPTS[1]].output_ids


@pytest.mark.parametrize("method", methods.GROWS_DYNAMIC)
def test_a_method_offered_a_dynamic_tree_grows_one(pairs, plain_runs, method):
    run = generate(pairs(method), PROMPTS[1], settings_for(method, dynamic=DYNAMIC))
    drafting = [r for r in run.rounds if r.proposed]
    assert drafting and all(r.is_tree and r.scored for r in drafting)  # every candidate scored: a dynamic tree
    assert max(len(r.nodes) for r in drafting) > DYNAMIC.depth  # wider than a chain
    assert run.output_ids == plain_runs[PROMPTS[1]].output_ids


@pytest.mark.parametrize("method", [m for m in SPECULATIVE if offers(m, verifier=BLOCK)])
def test_a_method_offered_block_verification_is_judged_by_it(pairs, plain_runs, method, monkeypatch):
    blocks = []

    def counted(*args):
        blocks.append(1)
        return judge(*args)

    judge = decode.verify_block
    monkeypatch.setattr(decode, "verify_block", counted)
    run = generate(pairs(method), PROMPTS[1], settings_for(method, verifier=BLOCK))
    assert run.settings.verifier == BLOCK and not any(r.is_tree for r in run.rounds)
    assert len(blocks) == len(run.rounds)  # every round's chain was judged as a block
    assert run.output_ids == plain_runs[PROMPTS[1]].output_ids  # exact


@pytest.mark.parametrize("method", [m for m in SPECULATIVE if offers(m, k_schedule=schedule.CONFIDENCE)])
def test_a_method_offered_an_adaptive_k_stops_on_its_own_confidence(pairs, plain_runs, method):
    threshold = 0.5
    confident = settings_for(method, k_schedule=schedule.CONFIDENCE, confidence_threshold=threshold)
    run = generate(pairs(method), PROMPTS[1], confident)
    for r in run.rounds:
        drafted = r.schedule.confidences
        assert len(drafted) == len(r.positions)  # the drafter reported each draft's own probability
        assert all(c >= threshold for c in drafted[:-1])  # and stopped at the first below the threshold
    assert any(r.schedule.confidences for r in run.rounds)
    assert run.output_ids == plain_runs[PROMPTS[1]].output_ids
