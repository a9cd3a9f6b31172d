"""The target's own low-bit copy as its draft: the kernels compute what the rounded weights say, the copy is built once
and leaves the target untouched, fewer bits move q further from p, and what it cannot run is refused."""

import pytest
import torch

from specviz.core.quantize import QuantOptions, round_groupwise
from specviz.core.sampling import SamplingSettings, logits_to_probs
from specviz.core.settings import RunSettings
from specviz.engine.decode import generate
from specviz.engine.forward.kv import CachedModel
from specviz.engine.forward.quantized import (
    DEQUANTIZED,
    INT4,
    bfloat16_native,
    int4_matrix,
    kernel_works,
    quantized_copy,
)
from specviz.errors import SettingsError

PROMPT = "def add(a, b):\n    return a + b\n\ndef sub(a, b):\n    return"


def test_the_4_bit_kernel_multiplies_by_the_rounded_weights():
    generator = torch.Generator().manual_seed(3)
    weight, x = torch.randn(96, 64, generator=generator), torch.randn(5, 64, generator=generator)
    rounded = round_groupwise(weight, 4, 32)
    got = int4_matrix(rounded).times(x)  # (5, 96), bfloat16 inside, float32 out
    expected = x @ rounded.weights().t()
    assert got.dtype == torch.float32
    assert torch.allclose(got, expected, atol=0.15, rtol=0.02)  # bfloat16 activations: about 3 significant digits


def test_the_kernels_run_on_this_cpu():
    assert kernel_works(INT4)  # torch's CPU wheel ships them: a copy here is never the slow dequantized one


def test_the_copy_is_built_once_per_options_and_leaves_the_target_untouched(load):
    pair = load("llama-target")
    before = {name: p.clone() for name, p in pair.target.named_parameters()}
    copy = quantized_copy(pair.target, QuantOptions())
    assert quantized_copy(pair.target, QuantOptions()) is copy
    assert quantized_copy(pair.target, QuantOptions(bits=2)) is not copy
    assert copy.kernel == INT4 and copy.build_s > 0
    assert all(torch.equal(before[name], p) for name, p in pair.target.named_parameters())


def mean_distance(pair, options: QuantOptions) -> float:
    """Mean total variation between the copy's q and the target's p over every position of the prompt (T = 1)."""
    ids = pair.tokenizer.encode(PROMPT)
    sampling = SamplingSettings(temperature=1.0)
    rows = []
    for lean in (None, quantized_copy(pair.target, options).weights):
        state = CachedModel(pair.target, pair.vocab_size, ids[:1], forward="lean", lean=lean)
        rows.append(logits_to_probs(state.forward(torch.tensor(ids[1:]), logits_to_keep=len(ids)), sampling))
    p, q = rows
    return float((p - q).abs().sum(-1).mean() / 2)


def test_fewer_bits_move_q_further_from_p(load):
    pair = load("llama-target")
    distances = [mean_distance(pair, QuantOptions(bits=bits)) for bits in (8, 4, 3, 2)]
    assert distances == sorted(distances), distances
    assert distances[0] < 0.05 and distances[-1] > 4 * distances[0]  # 8 bits: near the target; 2 bits: far


def test_a_run_names_the_copy_it_drafted_with(load):
    pair = load("llama-target")
    run = generate(pair, PROMPT, RunSettings(method="quantized", k=3, max_new_tokens=8, quant=QuantOptions(bits=3)))
    head = (
        "bfloat16" if bfloat16_native(pair.target.device) else "float32"
    )  # the head unrounded, as this CPU runs it fastest
    assert run.meta["draft_copy"] == f"the target at 3-bit, groups of 32, head unrounded ({head}) · {INT4}"
    assert run.settings.quant.bits == 3


def test_a_target_the_lean_forward_cannot_run_is_refused_with_the_reason(load):
    with pytest.raises(
        SettingsError, match="quantized self-draft runs the target's copy through the lean forward.*gpt2"
    ):
        generate(load("gpt2-target"), "x = 1", RunSettings(method="quantized", max_new_tokens=2))


def test_off_the_cpu_kernels_a_copy_runs_its_rounded_weights_dequantized(load, monkeypatch):
    from specviz.engine.forward import quantized

    pair = load("llama-target")
    int4 = quantized_copy(pair.target, QuantOptions(group=64))
    monkeypatch.setattr(quantized, "_COPIES", type(quantized._COPIES)())
    monkeypatch.setattr(quantized, "_kernel", lambda bits, device: DEQUANTIZED)
    plain = quantized_copy(pair.target, QuantOptions(group=64))
    assert plain.kernel == DEQUANTIZED
    ids = torch.tensor(pair.tokenizer.encode(PROMPT))
    q = [
        CachedModel(pair.target, pair.vocab_size, ids[:1].tolist(), lean=c.weights)
        .forward(ids[1:], len(ids))
        .softmax(-1)
        for c in (int4, plain)
    ]
    assert float((q[0] - q[1]).abs().sum(-1).max() / 2) < 0.03  # the same rounded weights, two ways of multiplying


@pytest.mark.slow
def test_a_2_bit_copy_rejects_often_and_its_sampled_output_still_follows_the_target(load):
    """Sampled at T = 1 from a copy far from the target, so residuals are drawn: χ² of the first token, 200 seeds."""
    from collections import Counter

    from specviz.core.chisq import chi2_goodness_of_fit

    pair = load("llama-target")
    ids = pair.tokenizer.encode(PROMPT)
    sampled = SamplingSettings(temperature=1.0)
    with torch.inference_mode():
        p = logits_to_probs(pair.target(input_ids=torch.tensor([ids])).logits[0, -1, : pair.vocab_size], sampled)
    counts, rejected = Counter(), 0
    for seed in range(200):
        settings = RunSettings(
            method="quantized",
            k=3,
            max_new_tokens=4,
            sampling=sampled,
            seed=seed,
            stop_at_eos=False,
            quant=QuantOptions(bits=2),
        )
        run = generate(pair, PROMPT, settings)
        counts[run.output_ids[0]] += 1
        rejected += run.totals.judged - run.totals.accepted
    assert rejected > 50  # the residual was drawn often
    observed = torch.tensor([counts.get(i, 0) for i in range(pair.vocab_size)], dtype=torch.float64)
    assert chi2_goodness_of_fit(observed, p.double()).p_value > 1e-3


def test_hugging_faces_lane_drafts_with_the_same_copy_and_greedy_equals_plain(load):
    """generate(assistant_model=the copy as a transformers model): its q is specviz's copy's, and under greedy the
    output is the target's own."""
    from specviz.engine.compare import hf_generate
    from specviz.engine.forward.quantized import PackedLinear, hf_quantized_copy

    pair = load("llama-target")
    options = QuantOptions()
    twin = hf_quantized_copy(pair.target, options)
    assert hf_quantized_copy(pair.target, options) is twin and twin is not pair.target
    native = bfloat16_native(pair.target.device)  # the head unrounded: bfloat16 with AVX-512 BF16, else float32
    assert isinstance(twin.get_output_embeddings(), PackedLinear if native else torch.nn.Linear)
    layers = [m for name, m in twin.named_modules() if name.startswith("model.layers.")]
    assert layers and not any(isinstance(m, torch.nn.Linear) for m in layers)  # every layer's linear map rounded
    ids = pair.tokenizer.encode(PROMPT)
    with torch.inference_mode():
        hf_q = twin(input_ids=torch.tensor([ids])).logits[0, :, : pair.vocab_size].softmax(-1)
        state = CachedModel(pair.target, pair.vocab_size, ids[:1], lean=quantized_copy(pair.target, options).weights)
        lean_q = state.forward(torch.tensor(ids[1:]), logits_to_keep=len(ids)).softmax(-1)
    assert float((hf_q - lean_q).abs().sum(-1).max() / 2) < 0.02  # one rounding, two forwards (bfloat16 inside)
    settings = RunSettings(method="quantized", k=3, max_new_tokens=12, stop_at_eos=False)
    plain = generate(pair, PROMPT, RunSettings(method="plain", max_new_tokens=12, stop_at_eos=False))
    lane = hf_generate(pair, pair.tokenizer.encode(PROMPT), settings, "hf_quantized")
    assert list(lane.output_ids) == list(plain.output_ids)
