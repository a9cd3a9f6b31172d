"""The shipped EAGLE-1 and EAGLE-3 heads and MTP module (assets/models/pystdlib/eagle, eagle3 and mtp, `train-tiny`):
found beside the bundled target, greedy output equal to plain decoding on held-out code and prose prompts, and sampled
output with the target's distribution (a fixed-seed χ² that a lossy judge fails)."""

from __future__ import annotations

import json

import first_two
import pytest

from specviz import methods
from specviz.core.sampling import SamplingSettings
from specviz.core.settings import RunSettings
from specviz.engine import proposers
from specviz.engine.decode import generate
from specviz.engine.loading.models import ASSETS, BUNDLED_PAIR, load_pair

WORKLOADS = ASSETS / "workloads"
HELD_OUT = [json.loads(line)["prompt"] for line in (WORKLOADS / "code.jsonl").read_text().splitlines()[:4]]
HELD_OUT += [json.loads(line)["prompt"] for line in (WORKLOADS / "prose.jsonl").read_text().splitlines()[:2]]
SAMPLED = SamplingSettings(temperature=1.0, top_k=12)  # twelve tokens: every one expected often enough for χ²
SEEDS = 500
HEADS = [methods.EAGLE, methods.EAGLE3, methods.MTP]  # MTP drafts with EAGLE-1's drafter, its own module


@pytest.fixture(scope="module")
def bundled():
    return load_pair(device="cpu", draft=None)


def test_the_shipped_head_is_found_beside_the_bundled_target(bundled):
    assert bundled.head(methods.EAGLE) == str(BUNDLED_PAIR / "eagle")
    head = bundled.load_head_for(methods.EAGLE)
    assert sum(p.numel() for p in head.parameters()) == pytest.approx(0.92e6, rel=0.01)
    assert bundled.head(methods.EAGLE3) == str(BUNDLED_PAIR / methods.get(methods.EAGLE3).head.beside)
    head3 = bundled.load_head_for(methods.EAGLE3)
    assert head3.layers_read == (2, 5, 7) and head3.draft_vocab_size == 2048
    assert sum(p.numel() for p in head3.parameters()) == pytest.approx(1.71e6, rel=0.01)


@pytest.mark.slow
@pytest.mark.parametrize("method", HEADS)
@pytest.mark.parametrize("k", [1, 4])
def test_greedy_eagle_equals_plain_on_held_out_prompts(bundled, k, method):
    accepted = 0
    for prompt in HELD_OUT:
        plain = generate(bundled, prompt, RunSettings(method=methods.PLAIN, max_new_tokens=40, stop_at_eos=False))
        eagle = generate(bundled, prompt, RunSettings(method=method, k=k, max_new_tokens=40, stop_at_eos=False))
        assert eagle.output_ids == plain.output_ids
        accepted += eagle.totals.accepted
    assert accepted > 0  # a trained head: some drafts pass


def fits(bundled, prompt: str, method: str) -> tuple[float, float]:
    """χ² p-values of the first two committed tokens over SEEDS seeds (tests/first_two.py)."""
    return first_two.fits(bundled, prompt, SEEDS, SAMPLED, method=method)


PROMPT = HELD_OUT[0]


@pytest.mark.slow
@pytest.mark.parametrize("method", HEADS)
def test_sampled_eagle_emits_the_targets_distribution(bundled, method):
    first, second = fits(bundled, PROMPT, method)
    assert first > 1e-3 and second > 1e-3


@pytest.mark.slow
@pytest.mark.parametrize("method", HEADS)
def test_argmax_drafts_judged_with_the_heads_softmax_fail_the_same_check(bundled, monkeypatch, method):
    """The control (the mistake in Draft & Verify's sampling path): drafts are the head's argmax but judged with its
    full softmax as q, min(1, p/q), which is not what they were drawn from. (Drafts judged one-hot are exact however
    they were chosen: their probabilities never enter the test.)"""
    propose = proposers.EagleDrafter.propose

    def argmax_with_soft_q(self, k, u, stop_below=None):
        proposal = propose(self, k, u, stop_below)
        if proposal.q is None:  # an empty proposal (no depth left)
            return proposal
        return proposers.Proposal(proposal.q.argmax(-1), proposal.q)

    monkeypatch.setattr(proposers.EagleDrafter, "propose", argmax_with_soft_q)
    first, second = fits(bundled, PROMPT, method)
    assert min(first, second) < 1e-3
