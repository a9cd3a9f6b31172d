"""The bundled pair loads with plain transformers and with specviz, and speculative greedy equals plain greedy on it."""

import json

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from specviz.core.settings import RunSettings
from specviz.engine.decode import generate
from specviz.engine.models import ASSETS, BUNDLED_DRAFT, BUNDLED_TARGET, load_pair
from specviz.core.stats import first_divergence

CODE = [json.loads(line)["prompt"] for line in (ASSETS / "workloads" / "code.jsonl").read_text().splitlines()[:3]]


@pytest.fixture(scope="module")
def bundled():
    return load_pair(device="cpu")


def test_loads_with_plain_transformers():
    for path in (BUNDLED_TARGET, BUNDLED_DRAFT):
        model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
        tokenizer = AutoTokenizer.from_pretrained(path)
        ids = tokenizer("def add(a, b):", return_tensors="pt").input_ids
        assert model.generate(ids, max_new_tokens=4, do_sample=False).shape[1] == ids.shape[1] + 4


def test_is_the_default_and_shares_one_tokenizer(bundled):
    assert bundled.target_name == BUNDLED_TARGET and bundled.draft_name == BUNDLED_DRAFT
    assert bundled.dtype == torch.float32 and bundled.vocab_size == len(bundled.tokenizer)
    assert bundled.target.config.num_hidden_layers > bundled.draft.config.num_hidden_layers


@pytest.mark.parametrize("k", [1, 4, 8])
def test_speculative_greedy_equals_plain_greedy(bundled, k):
    for prompt in CODE:
        spec = generate(bundled, prompt, RunSettings(method="draft", k=k, max_new_tokens=48))
        plain = generate(bundled, prompt, RunSettings(method="plain", max_new_tokens=48))
        assert spec.output_ids == plain.output_ids
        assert 0 < spec.totals.alpha <= 1


def test_in_bfloat16_greedy_output_differs_from_plain_only_at_rounding_ties():
    """bfloat16 rounds a K + 1-token verify pass differently from one-token steps; where the outputs part, the target's
    top two logits must tie to within bfloat16's resolution (two units in the last place at that magnitude)."""
    pair = load_pair(device="cpu", dtype="bfloat16")
    assert pair.dtype == torch.bfloat16
    prompts = [json.loads(line)["prompt"] for line in (ASSETS / "workloads" / "code.jsonl").read_text().splitlines()]
    matched = 0
    for prompt in prompts[:8]:
        plain = generate(pair, prompt, RunSettings(method="plain", max_new_tokens=48))
        spec = generate(pair, prompt, RunSettings(method="draft", k=3, max_new_tokens=48))
        d = first_divergence(plain.output_ids, spec.output_ids)
        if d is None:
            matched += 1
            continue
        with torch.inference_mode():
            ids = torch.tensor([[*plain.prompt_ids, *plain.output_ids[:d]]])
            top2 = pair.target(input_ids=ids).logits[0, -1].float().topk(2).values  # (2,)
        ulp = 2.0 ** (torch.floor(torch.log2(top2[0].abs())) - 7)  # bfloat16 spacing near the top logit
        assert top2[0] - top2[1] <= 2 * ulp, f"diverged at token {d} with a logit gap of {top2[0] - top2[1]:.3f}"
    assert matched >= 4  # most outputs still match exactly
