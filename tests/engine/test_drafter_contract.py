"""The drafter contract: a proposer that asks for the target's hidden states gets them, exactly for the tokens the
target has committed to its cache, in order, whatever each round accepted; asking for them changes no decision."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import pytest
import torch

from specviz import methods
from specviz.core.sampling import SamplingSettings
from specviz.core.settings import RunSettings
from specviz.engine import proposers
from specviz.engine.decode import generate
from specviz.engine.proposers import DraftModelProposer, TreeProposer

PROMPT = "class Counter:\n    def increment(self, step=1):\n"
LAYERS = (0, 2, 3)  # the embeddings, a middle layer and the last of the 3-layer test target


class Recording(proposers.Drafter):
    """Wraps a real drafter; keeps every block of features the loop hands it."""

    def __init__(self, inner, features: torch.Tensor | None, log: list[torch.Tensor]):
        self.inner, self.log = inner, log
        if features is not None:
            log.append(features)

    def propose(self, depth, u, stop_below=None):
        return self.inner.propose(depth, u, stop_below)

    def advance(self, committed, n_accepted, features=None):
        assert features is not None  # asked for, so handed every round
        self.log.append(features)
        self.inner.advance(committed, n_accepted)

    @property
    def cache_length(self):
        return self.inner.cache_length


def recording(base: type, log: list[torch.Tensor]) -> type:
    """A proposer class like `base` that reads LAYERS of the target's hidden states into `log`."""

    @dataclass(frozen=True)
    class FeatureReader(base):
        hidden_layers: ClassVar[tuple[int, ...]] = LAYERS

        def start(self, prompt_ids, features=None):
            return Recording(super().start(prompt_ids), features, log)

    return FeatureReader


@pytest.mark.parametrize(
    "base, settings",
    [
        (DraftModelProposer, RunSettings(k=3, max_new_tokens=30, sampling=SamplingSettings(temperature=1.0))),
        (TreeProposer, RunSettings(method="tree", tree=(2, 2, 1), k=3, max_new_tokens=30)),
    ],
    ids=["chain", "tree"],
)
def test_a_feature_reading_drafter_gets_the_targets_hidden_states_of_the_committed_tokens(
    load, monkeypatch, base, settings
):
    pair = load("llama-target", "llama-truncated")  # a fair draft: rounds accept anything from none to all
    settings = RunSettings(**{**settings.__dict__, "stop_at_eos": False})
    alone = generate(pair, PROMPT, settings)
    log: list[torch.Tensor] = []
    reader = recording(base, log)
    monkeypatch.setattr(proposers, "PROPOSER_CLASSES", (reader,))
    traced = generate(pair, PROMPT, settings)

    assert traced.output_ids == alone.output_ids  # reading features changes no decision
    accepted = [sum(p.accepted for p in r.positions) for r in traced.rounds]
    assert min(accepted) == 0
    assert max(accepted) >= 2  # the rows handed over really depend on what each round kept
    features = torch.cat(log, dim=1)  # (layers, rows, H)
    held = traced.rounds[-2].target_cache[1]  # what the target's cache holds after the last round it advanced
    sequence = torch.tensor([list(traced.prompt_ids) + list(traced.output_ids)])
    with torch.inference_mode():
        full = pair.target(input_ids=sequence, output_hidden_states=True).hidden_states  # one pass, no cache
    expected = torch.stack([full[layer][0, :held] for layer in LAYERS])  # (layers, held, H)
    assert features.shape == expected.shape
    torch.testing.assert_close(features, expected, atol=1e-4, rtol=1e-4)


def test_drafters_that_read_no_features_are_handed_none(load):
    pair = load("llama-target", "llama-truncated")
    readers = [cls for cls in proposers.PROPOSER_CLASSES if cls.hidden_layers]
    assert {cls.method for cls in readers} == {methods.EAGLE, methods.MTP, methods.EAGLE3, methods.MEDUSA}  # the heads
    assert proposers.EagleProposer.hidden_layers == (-1,)  # the target's last hidden state, after its final norm
    assert proposers.proposer_class(methods.EAGLE3).hidden_layers == (
        2,
        5,
        7,
    )  # a 10-layer target's states 2, 5, 7 (pre-norm)
    trace = generate(pair, PROMPT, RunSettings(k=2, max_new_tokens=6))
    assert len(trace.output_ids) == 6
