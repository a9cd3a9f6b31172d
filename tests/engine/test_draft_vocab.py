"""A trimmed draft vocabulary (engine/loading/vocab.py): q is the full draft's distribution renormalised over the kept
tokens (0 elsewhere), speculative greedy output still equals plain decoding, and bad requests get clear messages."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from specviz.core.sampling import SamplingSettings
from specviz.core.settings import RunSettings
from specviz.core.verify import next_token_distribution
from specviz.engine.decode import generate
from specviz.engine.forward.kv import CachedModel
from specviz.engine.loading.models import load_pair
from specviz.engine.loading.vocab import TokenCounts, check_trimmable, count_tokens
from specviz.errors import SettingsError

PROMPTS = ["def add(a, b):\n    return", "The quick brown fox"]


def with_counts(pair, text: str = "def return self the a b fox quick brown " * 20):
    """The pair with token counts taken over `text` (the tiny test tokenizer has no corpus of its own)."""
    counts = count_tokens(pair.tokenizer, [text], pair.vocab_size) + 1  # + 1: every token ranked, ties by id
    return dataclasses.replace(pair, draft_counts=TokenCounts(counts, "test text", 0))


def test_kept_tokens_are_the_most_frequent_in_id_order():
    counts = TokenCounts(np.array([5, 0, 9, 9, 1, 7] + [0] * 20), "hand-made", 0)
    assert counts.top_ids(16, 26)[:4].tolist() == [0, 1, 2, 3]  # ties broken by id, then sorted
    assert set(counts.top_ids(16, 26).tolist()) >= {0, 2, 3, 4, 5}
    with pytest.raises(SettingsError, match="from 16 to 26 tokens"):
        counts.top_ids(8, 26)


@pytest.mark.parametrize("arch", ["llama", "gpt2"])
def test_q_is_the_full_distribution_renormalised_over_the_kept_tokens(load, arch):
    pair = with_counts(load(f"{arch}-target", f"{arch}-truncated"))
    vocab_ids = pair.draft_vocab_ids(48)
    ids = pair.tokenizer.encode(PROMPTS[0])
    full = CachedModel(pair.draft, pair.vocab_size, ids)
    trimmed = CachedModel(pair.draft, pair.vocab_size, ids, vocab_ids)
    for state in (full, trimmed):
        state.prefill()
    full_logits, trimmed_logits = full.forward()[-1], trimmed.forward()[-1]  # (V,)
    outside = torch.ones(pair.vocab_size, dtype=torch.bool)
    outside[vocab_ids] = False
    q = torch.softmax(trimmed_logits, -1)
    assert torch.all(q[outside] == 0)
    assert torch.isfinite(trimmed_logits[vocab_ids]).all()
    expected = torch.softmax(full_logits, -1)[vocab_ids]
    torch.testing.assert_close(q[vocab_ids], expected / expected.sum(), rtol=1e-5, atol=1e-7)
    token = vocab_ids[3]
    torch.testing.assert_close(trimmed.step(token)[vocab_ids], full.step(token)[vocab_ids], rtol=1e-5, atol=1e-5)


def test_speculative_sampling_stays_exact_when_q_is_zero_on_tokens_p_likes():
    p = torch.tensor([0.1, 0.4, 0.3, 0.2], dtype=torch.float64)
    q = torch.tensor([0.5, 0.0, 0.5, 0.0], dtype=torch.float64)  # a draft that cannot propose tokens 1 and 3
    torch.testing.assert_close(next_token_distribution(p, q), p, rtol=0, atol=1e-12)


@pytest.mark.parametrize("arch", ["llama", "gpt2"])
@pytest.mark.parametrize("method, tree", [("draft", ()), ("tree", (2, 2, 1))])
def test_greedy_output_with_a_trimmed_draft_equals_plain_decoding(load, arch, method, tree):
    pair = with_counts(load(f"{arch}-target", f"{arch}-truncated"))
    for prompt in PROMPTS:
        plain = generate(pair, prompt, RunSettings(method="plain", max_new_tokens=24))
        settings = RunSettings(method=method, tree=tree, k=len(tree) or 4, max_new_tokens=24, draft_vocab=40)
        trimmed = generate(pair, prompt, settings)
        assert trimmed.output_ids == plain.output_ids, (arch, method, prompt)
        assert trimmed.settings.draft_vocab == 40
        vocab_ids = set(pair.draft_vocab_ids(40).tolist())
        drafted = [pos.token_id for r in trimmed.rounds for pos in r.positions]
        assert set(drafted) <= vocab_ids  # never proposes a token outside its vocabulary


def test_the_bundled_draft_ships_counts_and_keeps_greedy_output_and_alpha():
    pair = load_pair(device="cpu")
    assert pair.recommended_draft_vocab == 1024
    assert pair.draft_counts.counts.sum() > 1_000_000
    prompt = "def read_lines(path):\n"
    plain = generate(pair, prompt, RunSettings(method="plain", max_new_tokens=32))
    full = generate(pair, prompt, RunSettings(max_new_tokens=32))
    trimmed = generate(pair, prompt, RunSettings(max_new_tokens=32, draft_vocab=1024))
    assert trimmed.output_ids == plain.output_ids == full.output_ids
    accepted = lambda t: sum(r.accepted for r in t.rounds)  # noqa: E731
    assert accepted(trimmed) >= accepted(full) - 2  # the target's greedy text is made of frequent tokens


def test_settings_json_names_the_draft_vocabulary_only_when_trimmed():
    assert "draft_vocab" not in RunSettings().to_dict()
    trimmed = RunSettings(draft_vocab=512, sampling=SamplingSettings(1.0))
    assert RunSettings.from_dict(json.loads(json.dumps(trimmed.to_dict()))) == trimmed
    with pytest.raises(SettingsError, match="draft vocabulary"):
        RunSettings(draft_vocab=-1)


def test_clear_messages_for_drafts_that_cannot_be_trimmed(load):
    pair = load("llama-target", "llama-truncated")  # no token counts beside this draft
    with pytest.raises(SettingsError, match="no token counts"):
        generate(pair, PROMPTS[0], RunSettings(draft_vocab=64, max_new_tokens=4))
    with pytest.raises(SettingsError, match="plain LM head"):
        check_trimmable(SimpleNamespace(config=SimpleNamespace(model_type="gemma2")))


@pytest.mark.slow
def test_cli_resolves_auto_and_refuses_a_bad_value():
    base = [sys.executable, "-m", "specviz", "run", "--prompt", "def f(x):", "--max-new-tokens", "4"]
    out = subprocess.run([*base, "--json"], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout)["settings"]["draft_vocab"] == 1024  # auto: the bundled draft's recommendation
    out = subprocess.run([*base, "--json", "--draft-vocab", "0"], capture_output=True, text=True, check=True)
    assert "draft_vocab" not in json.loads(out.stdout)["settings"]
    bad = subprocess.run([*base, "--draft-vocab", "lots"], capture_output=True, text=True)
    assert bad.returncode != 0
    assert "--draft-vocab takes auto or a whole number" in bad.stderr
    assert "Traceback" not in bad.stderr
