"""Temperatures that underflow (1e-40 once gave NaN in every p, q and ratio): refused clearly; allowed ones never give
NaN, even for huge logits."""

import pytest
import torch

from specviz.core.sampling import SamplingSettings, logits_to_probs
from specviz.errors import SettingsError

MIN_TEMPERATURE = 1e-3  # specviz.core.sampling.MIN_TEMPERATURE, spelt out so this file also runs against older code


@pytest.mark.parametrize("temperature", [1e-40, 1e-300, 5e-324, 1e-45, 1e-30, 1e-4, 0.000999])
def test_a_temperature_between_greedy_and_the_smallest_that_samples_is_refused(temperature):
    with pytest.raises(SettingsError, match=r"temperature must be 0 \(greedy\) or at least 0.001"):
        SamplingSettings(temperature)


@pytest.mark.parametrize("temperature", [0, 0.0, MIN_TEMPERATURE, 0.05, 1.0, 1e308])
def test_greedy_and_ordinary_temperatures_are_allowed(temperature):
    assert SamplingSettings(temperature).temperature == temperature


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("top_k, top_p", [(0, 1.0), (2, 1.0), (0, 0.9)])
def test_huge_logits_at_the_smallest_temperature_give_a_distribution_not_nan(dtype, top_k, top_p):
    logits = torch.tensor(
        [
            [3e38, 1e38, -3e38, 0.0],  # near float32's limit: divided by 0.001 it overflows unless shifted first
            [1e4, 1e4 - 1, 0.0, -1e4],  # large but ordinary
            [1.0, 2.0, 3.0, 4.0],  # small
            [-1e30, -1e30, -1e30, -1e30],  # all equal and very negative: uniform
        ]
    ).to(dtype)
    probs = logits_to_probs(logits, SamplingSettings(MIN_TEMPERATURE, top_k, top_p))
    assert not probs.isnan().any()
    assert torch.allclose(probs.sum(-1), torch.ones(4))
    assert probs[0, 0] == 1.0  # the largest logit takes it all at T = 0.001
    assert probs[2, 3] == 1.0


def test_ordinary_logits_are_scaled_exactly_as_before():
    logits = torch.randn(3, 50, generator=torch.Generator().manual_seed(0))
    assert torch.equal(logits_to_probs(logits, SamplingSettings(0.7)), (logits / 0.7).softmax(-1))


def test_the_module_states_the_rule():
    from specviz.core import sampling

    assert sampling.MIN_TEMPERATURE == MIN_TEMPERATURE
