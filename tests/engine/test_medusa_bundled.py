"""The shipped Medusa heads (assets/models/pystdlib/medusa, `train-tiny medusa`): found beside the bundled target,
greedy output equal to plain decoding on held-out code and prose prompts, and sampled output with the target's
distribution (a fixed-seed χ² that a lossy judge fails). The χ² helpers are the EAGLE-1 head's (same check)."""

from __future__ import annotations

import pytest
from test_eagle_bundled import HELD_OUT, PROMPT, fits

from specviz import methods
from specviz.core.settings import RunSettings
from specviz.engine import proposers
from specviz.engine.decode import generate
from specviz.engine.loading.models import BUNDLED_PAIR, load_pair
from specviz.engine.proposers.medusa import MedusaDrafter

MEDUSA = methods.MEDUSA


@pytest.fixture(scope="module")
def bundled():
    return load_pair(device="cpu", draft=None)


def test_the_shipped_heads_are_found_beside_the_bundled_target_in_a_few_mb(bundled):
    assert bundled.head(MEDUSA) == str(BUNDLED_PAIR / methods.get(methods.MEDUSA).head.beside)
    heads = bundled.load_head_for(MEDUSA)
    assert heads.num_heads == 4 and heads.shared_lm_head  # one LM head (the target's copy) for all four
    size = sum(f.stat().st_size for f in (BUNDLED_PAIR / methods.get(methods.MEDUSA).head.beside).iterdir())
    assert size < 6e6


@pytest.mark.slow
@pytest.mark.parametrize("k", [1, 4])
def test_greedy_medusa_equals_plain_on_held_out_prompts(bundled, k):
    accepted = 0
    for prompt in HELD_OUT:
        plain = generate(bundled, prompt, RunSettings(method=methods.PLAIN, max_new_tokens=40, stop_at_eos=False))
        medusa = generate(bundled, prompt, RunSettings(method=MEDUSA, k=k, max_new_tokens=40, stop_at_eos=False))
        assert medusa.output_ids == plain.output_ids
        accepted += medusa.totals.accepted
    assert accepted > 0  # trained heads: some drafts pass


@pytest.mark.slow
def test_sampled_medusa_emits_the_targets_distribution(bundled):
    first, second = fits(bundled, PROMPT, MEDUSA)
    assert first > 1e-3 and second > 1e-3


@pytest.mark.slow
def test_argmax_drafts_judged_with_the_heads_softmax_fail_the_same_check(bundled, monkeypatch):
    """The control: each head's argmax drafted, but judged with that head's full softmax as q (not what it was
    drawn from)."""
    propose = MedusaDrafter.propose

    def argmax_with_soft_q(self, k, u, stop_below=None):
        proposal = propose(self, k, u, stop_below)
        if proposal.q is None:
            return proposal
        return proposers.Proposal(proposal.q.argmax(-1), proposal.q)

    monkeypatch.setattr(MedusaDrafter, "propose", argmax_with_soft_q)
    first, second = fits(bundled, PROMPT, MEDUSA)
    assert min(first, second) < 1e-3
