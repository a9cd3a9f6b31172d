import pytest
import torch

from specviz.core.sampling import SamplingSettings, logits_to_probs, sample, uniforms
from specviz.core.settings import RunSettings
from specviz.errors import SettingsError


def test_greedy_is_one_hot_on_the_argmax():
    probs = logits_to_probs(torch.tensor([[0.1, 2.0, -1.0], [5.0, 0.0, 4.9]]), SamplingSettings(0.0))
    assert probs.tolist() == [[0, 1, 0], [1, 0, 0]]


def test_temperature_sharpens_and_flattens():
    logits = torch.tensor([1.0, 0.0])
    cold = logits_to_probs(logits, SamplingSettings(0.5))
    hot = logits_to_probs(logits, SamplingSettings(2.0))
    assert cold[0] > logits.softmax(-1)[0] > hot[0]
    assert torch.allclose(cold, (logits / 0.5).softmax(-1))


def test_top_k_keeps_the_k_largest():
    probs = logits_to_probs(torch.tensor([3.0, 1.0, 2.0, 0.0]), SamplingSettings(1.0, top_k=2))
    assert (probs > 0).tolist() == [True, False, True, False]
    assert probs.sum().item() == pytest.approx(1.0)


def test_top_p_keeps_the_smallest_set_reaching_p():
    logits = torch.tensor([0.5, 0.3, 0.15, 0.05]).log()
    probs = logits_to_probs(logits, SamplingSettings(1.0, top_p=0.7))  # .5 < .7, .5 + .3 >= .7: keep two
    assert (probs > 0).tolist() == [True, True, False, False]
    assert probs.tolist() == pytest.approx([0.625, 0.375, 0, 0])


def test_sampling_never_leaves_the_allowed_set():
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(64, 50, generator=g) * 2  # (rows, V)
    settings = SamplingSettings(1.3, top_k=5, top_p=0.8)
    probs = logits_to_probs(logits, settings)
    kth = logits.topk(5, dim=-1).values[:, -1:]
    for _ in range(200):
        tokens = sample(probs, uniforms(g, 64))  # (rows,)
        chosen_logits = logits.gather(1, tokens[:, None])
        assert (chosen_logits >= kth).all(), "a token outside the top-k was emitted"
        assert (probs.gather(1, tokens[:, None]) > 0).all(), "a token outside the top-p nucleus was emitted"


def test_sample_is_inverse_cdf_of_u_and_skips_zero_probabilities():
    probs = torch.tensor([0.0, 0.25, 0.0, 0.75])
    assert [int(sample(probs, torch.tensor(u))) for u in (1e-9, 0.25, 0.2500001, 1.0)] == [1, 1, 3, 3]


def test_uniforms_are_in_the_half_open_interval_zero_one():
    u = uniforms(torch.Generator().manual_seed(0), 100_000)
    assert (u > 0).all()
    assert (u <= 1).all()


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"temperature": -0.5}, "temperature must be >= 0"),
        ({"top_p": 0.0}, "top-p must be in (0, 1]"),
        ({"top_p": 1.5}, "top-p must be in (0, 1]"),
        ({"top_k": -1}, "top-k must be a whole number"),
        ({"temperature": 0.0, "top_p": 0.9}, "no effect at temperature 0"),
    ],
)
def test_bad_sampling_settings_say_what_is_wrong(kwargs, message):
    with pytest.raises(SettingsError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        SamplingSettings(**kwargs)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"k": 0}, "K \\(draft length\\) must be a whole number from 1 to 16"),
        ({"k": 17}, "from 1 to 16"),
        ({"max_new_tokens": 0}, "max new tokens must be"),
        ({"method": "magic"}, "method must be one of"),
    ],
)
def test_bad_run_settings_say_what_is_wrong(kwargs, message):
    with pytest.raises(SettingsError, match=message):
        RunSettings(**kwargs)
