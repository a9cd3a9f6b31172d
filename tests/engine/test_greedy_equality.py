"""Speculative greedy == plain greedy == the target's own generate(), token for token, on real forward passes."""

import pytest
import torch

from specviz.core.settings import RunSettings
from specviz.engine.decode import generate

PROMPTS = ["def add(a, b):\n    return", "The quick brown fox"]
MAX_NEW = 40
DRAFTS = {
    "self": lambda arch: f"{arch}-target",  # always right: everything accepted
    "random": lambda arch: f"{arch}-random",  # almost always wrong
    "truncated": lambda arch: f"{arch}-truncated",  # a second model that agrees some of the time
}


def hf_greedy(pair, prompt, max_new_tokens):
    """The target's own greedy generate(); padded embedding rows past the tokenizer are suppressed, as specviz does."""
    ids = torch.tensor([pair.tokenizer.encode(prompt)])
    padding = list(range(pair.vocab_size, pair.target.get_output_embeddings().weight.shape[0]))
    out = pair.target.generate(
        ids,
        attention_mask=torch.ones_like(ids),
        do_sample=False,
        max_new_tokens=max_new_tokens,
        eos_token_id=sorted(pair.eos_ids),
        pad_token_id=sorted(pair.eos_ids)[0],
        suppress_tokens=padding,
    )
    return out[0, ids.shape[1] :].tolist()


@pytest.fixture(scope="module")
def plain_greedy(load):
    """plain_greedy(arch) -> {prompt: plain greedy Trace of the target}, computed once per architecture."""
    cache = {}

    def _plain(arch):
        if arch not in cache:
            pair = load(f"{arch}-target")
            cache[arch] = {p: generate(pair, p, RunSettings(method="plain", max_new_tokens=MAX_NEW)) for p in PROMPTS}
        return cache[arch]

    return _plain


@pytest.mark.parametrize("arch", ["llama", "gpt2"])
def test_plain_greedy_equals_generate(load, plain_greedy, arch):
    pair = load(f"{arch}-target")
    for prompt, plain in plain_greedy(arch).items():
        assert list(plain.output_ids) == hf_greedy(pair, prompt, MAX_NEW)


@pytest.mark.parametrize("arch", ["llama", "gpt2"])
@pytest.mark.parametrize("draft", sorted(DRAFTS))
@pytest.mark.parametrize("k", [1, 3, 8])
def test_speculative_greedy_equals_plain_greedy(load, plain_greedy, arch, draft, k):
    pair = load(f"{arch}-target", DRAFTS[draft](arch))
    for prompt, plain in plain_greedy(arch).items():
        spec = generate(pair, prompt, RunSettings(method="draft", k=k, max_new_tokens=MAX_NEW))
        assert spec.output_ids == plain.output_ids
        assert spec.text == plain.text


@pytest.mark.parametrize("arch", ["llama", "gpt2"])
def test_acceptance_matches_the_kind_of_draft(load, arch):
    def alpha(draft):
        trace = generate(load(f"{arch}-target", draft), PROMPTS[0], RunSettings(k=4, max_new_tokens=40))
        return trace.totals.alpha

    assert alpha(f"{arch}-target") == 1.0  # the target as its own draft is always right
    assert alpha(f"{arch}-random") < 0.2


@pytest.mark.parametrize("arch", ["gpt2"])  # llama: the method contract (test_method_contract.py)
def test_ngram_lookup_greedy_equals_plain(load, arch):
    pair = load(f"{arch}-target")
    prompt = "for item in items:\n    print(item)\nfor item in items:\n   "
    ngram = generate(pair, prompt, RunSettings(method="ngram", k=4, max_new_tokens=40))
    plain = generate(pair, prompt, RunSettings(method="plain", max_new_tokens=40))
    assert ngram.output_ids == plain.output_ids
    assert ngram.totals.proposed > 0
