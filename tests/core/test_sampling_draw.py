"""draw: the token and the distribution it was drawn from, as sample(logits_to_probs(...)) gives them; greedy's
shortcut (the argmax, without the cumulative sum) changes nothing."""

import torch

from specviz.core.sampling import SamplingSettings, draw, logits_to_probs, sample


def test_draw_is_sample_of_the_processed_distribution_greedy_and_sampled():
    generator = torch.Generator().manual_seed(0)
    for sampling in (SamplingSettings(), SamplingSettings(temperature=0.8, top_k=5), SamplingSettings(1.0, 0, 0.9)):
        for _ in range(50):
            logits = torch.randn(64, generator=generator) * 3
            u = 1.0 - torch.rand((), generator=generator)
            token, probs = draw(logits, sampling, u)
            expected = logits_to_probs(logits, sampling)
            assert torch.equal(probs, expected)
            assert int(token) == int(sample(expected, u))
