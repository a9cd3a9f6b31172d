"""Trees of feature-head drafts on the shipped heads (assets/models/pystdlib/{eagle,eagle3,medusa}): with a tree shape,
EAGLE-1 and EAGLE-3 grow EAGLE-2-style trees (each node's children are the head's top-b tokens from that node's own
predicted feature) and Medusa its Cartesian tree (head i's top-b at depth i + 1). Greedy output equals plain decoding,
a (1, 1, 1, 1) tree drafts exactly the K = 4 chain, the tree's top-1 path is the chain, a sibling is accepted where
the chain would have stopped, and sampled runs emit the target's distribution (a fixed-seed χ² that children judged
with the head's soft q instead of one-hot fail)."""

from __future__ import annotations

import first_two
import pytest
import torch
from test_eagle_bundled import HELD_OUT, PROMPT, SAMPLED

from specviz import methods
from specviz.core.sampling import SamplingSettings, logits_to_probs
from specviz.core.settings import RunSettings
from specviz.core.verify import tree_parents
from specviz.engine import proposers
from specviz.engine.decode import generate
from specviz.engine.forward.kv import CachedModel
from specviz.engine.loading.models import load_pair
from specviz.errors import SettingsError

HEADS = [methods.EAGLE, methods.EAGLE3, methods.MEDUSA]
SEEDS = 400


@pytest.fixture(scope="module")
def bundled():
    return load_pair(device="cpu", draft=None)


def run(bundled, prompt: str, method: str, tree=(), **changes):
    settings = RunSettings(method=method, k=4, tree=tree, max_new_tokens=40, stop_at_eos=False, **changes)
    return generate(bundled, prompt, settings)


def sibling_accepted(trace) -> bool:
    """Whether some round accepted a node that is not its parent's first child (the head's top-1 token): a token the
    chain would not have drafted."""
    for r in trace.rounds:
        firsts = {}
        for node in r.nodes:
            firsts.setdefault(node.parent, node.id)
        if any(firsts[r.nodes[i].parent] != i for i in r.path):
            return True
    return False


@pytest.mark.slow
@pytest.mark.parametrize("method", HEADS)
@pytest.mark.parametrize("tree", [(2, 2, 1, 1), (3, 1, 1)], ids=["2,2,1,1", "3,1,1"])
def test_greedy_head_trees_equal_plain_on_held_out_prompts(bundled, method, tree):
    siblings = 0
    for prompt in HELD_OUT[:4]:  # the code prompts
        plain = run(bundled, prompt, methods.PLAIN)
        trace = run(bundled, prompt, method, tree)
        assert trace.output_ids == plain.output_ids
        assert all(r.is_tree for r in trace.rounds if r.proposed)  # (the last round may have no depth left)
        siblings += sibling_accepted(trace)
    assert siblings > 0  # the tree is used: some round kept a token that is not the head's top-1


@pytest.mark.parametrize("method", HEADS)
def test_a_tree_of_single_children_is_the_chain(bundled, method):
    chain = run(bundled, HELD_OUT[1], method)
    tree = run(bundled, HELD_OUT[1], method, (1, 1, 1, 1))
    assert tree.output_ids == chain.output_ids
    assert [r.proposed for r in tree.rounds] == [r.proposed for r in chain.rounds]
    assert [r.accepted for r in tree.rounds] == [r.accepted for r in chain.rounds]


def drafter(bundled, method: str, prompt: str, tree=()):
    """A fresh drafter over the prompt, as the loop starts one (the target's prefill features)."""
    settings = RunSettings(method=method, k=4, tree=tree, sampling=SamplingSettings(temperature=0.0))
    proposer = proposers.proposer_class(method).for_run(proposers.RunContext(bundled, settings))
    ids = bundled.tokenizer.encode(prompt)
    target = CachedModel(bundled.target, bundled.vocab_size, ids, hidden_layers=proposer.hidden_layers)
    target.prefill()
    return proposer.start(ids, target.hidden)


def first_child_path(parents: tuple[int, ...]) -> list[int]:
    path, node = [], -1
    while node + 1 < len(parents) and node in parents:
        node = parents.index(node)  # the first child: the head's top-1 at that node
        path.append(node)
    return path


@pytest.mark.parametrize("method", HEADS)
@pytest.mark.parametrize("prompt", HELD_OUT[:3])
def test_the_trees_top_1_path_is_the_chain_and_its_depth_one_is_the_heads_top_b(bundled, method, prompt):
    """Each node reads its own path's features: siblings never see each other (the head's tree mask), so the path
    of first children repeats the greedy chain token for token."""
    u = torch.full((16,), 0.5)  # greedy: q is one-hot, any u in (0, 1] draws its token
    chain = drafter(bundled, method, prompt).propose(4, u)
    shape = (3, 2, 1, 1)
    tree = drafter(bundled, method, prompt, shape).propose(4, u)
    assert tree.parents == tree_parents(shape)
    assert tree.tokens[first_child_path(tree.parents)].tolist() == chain.tokens.tolist()
    assert len(set(tree.tokens[:3].tolist())) == 3  # the root's three children: three different tokens
    torch.testing.assert_close(tree.q, torch.nn.functional.one_hot(tree.tokens, bundled.vocab_size).float())


def test_medusa_trees_repeat_each_heads_top_b_under_every_node(bundled):
    tree = drafter(bundled, methods.MEDUSA, PROMPT, (2, 2, 1)).propose(3, torch.full((16,), 0.5))
    depth2 = tree.tokens[2:6].tolist()  # children of nodes 0 and 1
    assert depth2[:2] == depth2[2:]  # head 1's top-2, under both
    assert len(set(tree.tokens[6:].tolist())) == 1  # head 2's top-1 under every depth-2 node


def test_a_medusa_tree_deeper_than_its_heads_is_refused_with_both_numbers(bundled):
    with pytest.raises(SettingsError, match=r"5 levels deep, but the Medusa heads are 4"):
        run(bundled, PROMPT, methods.MEDUSA, (2, 1, 1, 1, 1))


def test_head_trees_take_no_adaptive_k_schedule():
    with pytest.raises(SettingsError, match="fixed shape"):
        RunSettings(method=methods.EAGLE, tree=(2, 2, 1, 1), k_schedule="heuristic")
    assert RunSettings(method=methods.EAGLE3, tree=(2, 2, 1, 1)).draft_slots == 2 + 4 + 4 + 4
    assert RunSettings(method=methods.MEDUSA, tree=(2, 2, 1, 1)).draft_length == 4


def first_two_p_values(bundled, method: str, tree) -> tuple[float, float]:
    """χ² p-values of the first two committed tokens of sampled tree runs over SEEDS seeds (tests/first_two.py)."""
    return first_two.fits(bundled, PROMPT, SEEDS, SAMPLED, method=method, tree=tree, k=4, max_new_tokens=3)


@pytest.mark.slow
@pytest.mark.parametrize("method", HEADS)
def test_sampled_head_trees_emit_the_targets_distribution(bundled, method):
    first, second = first_two_p_values(bundled, method, (3, 2))
    assert first > 1e-3 and second > 1e-3


@pytest.mark.slow
def test_top_b_children_judged_with_the_heads_softmax_fail_the_same_check(bundled, monkeypatch):
    """The control (core/verify.py TOP_B): the same deterministic children, but each judged with its parent's soft
    head distribution as q, which is not what it was drawn from."""
    grow = proposers.grow_top_b_tree

    def with_soft_q(shape, root_logits, expand, vocab_size):
        levels = [root_logits]  # per depth, the logits of the parents of that depth's nodes

        def keep(depth, nodes, tokens, rows):
            levels.append(expand(depth, nodes, tokens, rows))
            return levels[-1]

        proposal = grow(shape, root_logits, keep, vocab_size)
        soft = [logits_to_probs(parents, SAMPLED).repeat_interleave(b, 0) for parents, b in zip(levels, shape)]
        return proposers.Proposal(proposal.tokens, torch.cat(soft), proposal.parents)

    monkeypatch.setattr(proposers.eagle, "grow_top_b_tree", with_soft_q)  # where the EAGLE drafter calls it
    first, second = first_two_p_values(bundled, methods.EAGLE, (3, 2))
    assert min(first, second) < 1e-3
