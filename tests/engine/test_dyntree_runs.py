"""Dynamic (EAGLE-2) trees on real forward passes (core/dyntree.py, engine/proposers/): greedy output equals plain
decoding on the held-out prompts for the draft model and the EAGLE-1 / EAGLE-3 heads; (budget = depth, top-k = 1)
is the K = depth chain round for round; the trace records every candidate scored, expanded and kept, and round-trips
through JSON; sampled runs emit the target's distribution (a fixed-seed χ² over one round's first committed token)."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch
from first_two import target_p
from test_eagle_bundled import HELD_OUT, PROMPT, SAMPLED

from specviz import methods
from specviz.core.chisq import chi2_goodness_of_fit
from specviz.core.dyntree import DynamicTree
from specviz.core.settings import RunSettings
from specviz.core.trace_json import trace_from_json, trace_to_json
from specviz.engine import proposers
from specviz.engine.decode import generate
from specviz.engine.loading.models import BUNDLED_DRAFT, BUNDLED_TARGET, load_pair

METHODS = [methods.TREE, methods.EAGLE, methods.EAGLE3]
CHAINS = {methods.TREE: methods.DRAFT, methods.EAGLE: methods.EAGLE, methods.EAGLE3: methods.EAGLE3}
SEEDS = 300


@pytest.fixture(scope="module")
def bundled():
    return load_pair(BUNDLED_TARGET, BUNDLED_DRAFT, device="cpu", dtype="float32")


def run(bundled, prompt: str, method: str, dynamic=None, **changes):
    settings = RunSettings(method=method, dynamic=dynamic, max_new_tokens=40, stop_at_eos=False, **changes)
    return generate(bundled, prompt, settings)


@pytest.mark.slow
@pytest.mark.parametrize("method", METHODS)
def test_greedy_dynamic_trees_equal_plain_on_held_out_prompts(bundled, method):
    off_top = 0
    for prompt in HELD_OUT[:4]:  # the code prompts
        plain = run(bundled, prompt, methods.PLAIN)
        trace = run(bundled, prompt, method, DynamicTree(16, 5, 4))
        assert trace.output_ids == plain.output_ids
        for r in trace.rounds:
            if r.scored:
                kept = [c for c in r.scored if c.node >= 0]
                assert len(kept) == len(r.nodes) <= 16
                assert min(c.score for c in kept) >= max((c.score for c in r.scored if c.node < 0), default=-1e9)
                off_top += any(r.nodes[i].id != r.children(r.nodes[i].parent)[0].id for i in r.path)
    assert off_top > 0  # the tree is used: some round accepted a node that is not its parent's first child


@pytest.mark.parametrize("method", METHODS)
def test_budget_equal_to_depth_with_top_1_is_the_chain_round_for_round(bundled, method):
    chain = run(bundled, HELD_OUT[1], CHAINS[method], k=4)
    tree = run(bundled, HELD_OUT[1], method, DynamicTree(4, 4, 1))
    assert [r.committed for r in tree.rounds] == [r.committed for r in chain.rounds]
    assert [r.accepted for r in tree.rounds] == [r.accepted for r in chain.rounds]


def test_the_trace_records_scored_expanded_and_kept_and_round_trips(bundled):
    trace = run(bundled, PROMPT, methods.EAGLE, DynamicTree(10, 4, 3))
    r = trace.rounds[0]
    assert len(r.scored) == DynamicTree(10, 4, 3).candidates  # 3 + 3 * 9
    assert sum(c.expanded for c in r.scored) == 3 * 3  # the frontier of levels 1..3
    assert sorted(c.node for c in r.scored if c.node >= 0) == list(range(10))
    for c in r.scored:
        if c.node >= 0:
            node = r.nodes[c.node]
            assert node.token_id == c.token_id and node.depth == c.depth
            assert node.q == 1.0  # judged one-hot
            assert node.q_top[0].prob == pytest.approx(max(s.q for s in r.scored if s.parent == c.parent))
    assert trace_from_json(trace_to_json(trace)) == trace
    assert RunSettings.from_dict(trace.settings.to_dict()).dynamic == DynamicTree(10, 4, 3)


def test_medusa_refuses_a_dynamic_tree():
    from specviz.errors import SettingsError

    with pytest.raises(SettingsError, match="never see a drafted token"):
        RunSettings(method=methods.MEDUSA, dynamic=DynamicTree(16, 4, 4))


def first_token_p_value(bundled, method: str) -> float:
    """χ² p-value of the first committed token of SEEDS sampled runs (one round) against p(. | prompt)."""
    ids = bundled.tokenizer.encode(PROMPT)
    firsts = []
    for seed in range(SEEDS):
        settings = RunSettings(
            method=method, dynamic=DynamicTree(8, 3, 3), max_new_tokens=3, sampling=SAMPLED, seed=seed
        )
        firsts.append(generate(bundled, PROMPT, settings).output_ids[0])
    counts = torch.bincount(torch.tensor(firsts), minlength=bundled.vocab_size)
    return chi2_goodness_of_fit(counts, target_p(bundled, ids, SAMPLED)).p_value


@pytest.mark.slow
@pytest.mark.parametrize("method", METHODS)
def test_sampled_dynamic_trees_emit_the_targets_distribution(bundled, method):
    assert first_token_p_value(bundled, method) > 1e-3


@pytest.mark.slow
def test_chosen_children_judged_with_the_drafts_softmax_fail_the_same_check(bundled, monkeypatch):
    """The control: the same top-k children, judged with the draft's soft q instead of one-hot (they were chosen,
    not drawn from it), bias the first token."""
    grow = proposers.dynamic_proposal

    def with_soft_q(*args):
        proposal = grow(*args)
        return replace(proposal, q=proposal.soft_q)

    monkeypatch.setattr(proposers.draft_model, "dynamic_proposal", with_soft_q)  # where the tree drafter calls it
    assert first_token_p_value(bundled, methods.TREE) < 1e-3
