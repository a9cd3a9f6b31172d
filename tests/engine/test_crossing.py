"""TLI and SLEM on real models whose tokenizers differ: greedy output equals plain decoding (a hand-built tiny pair,
and SmolLM2-135M-Instruct drafted by the bundled pystdlib draft), sampled TLI output follows the target (χ²), the
round records the translation, and pairs that cannot draft across tokenizers are refused with the reason."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import pytest
import torch
from tiny_models import CORPUS, EOS, build_model, build_tokenizer
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers
from transformers import PreTrainedTokenizerFast

from specviz import methods
from specviz.core.chisq import chi2_goodness_of_fit, chi2_homogeneity
from specviz.core.sampling import SamplingSettings, logits_to_probs
from specviz.core.settings import RunSettings
from specviz.core.trace_json import trace_from_json, trace_to_json
from specviz.engine.decode import decode_rounds, encode_prompt, generate
from specviz.engine.loading.models import BUNDLED_DRAFT, load_pair
from specviz.errors import IncompatiblePairError, SettingsError

PROMPT = "def add(a, b):"


@pytest.fixture(scope="module")
def tiny_dirs(tmp_path_factory):
    """A tiny target and a tiny draft with a tokenizer of its own (the same text, a smaller vocabulary), and drafts
    whose tokenizers cannot be drafted across."""
    root = tmp_path_factory.mktemp("crossing")
    build_model(root / "target", build_tokenizer(root / "t-tok"), "llama", layers=2, seed=1)
    # its own merges too (zebra, jukebox): transformers' sampled lane fails on a draft vocabulary inside the target's
    draft_tok = build_tokenizer(root / "d-tok", vocab_size=290, corpus=CORPUS + "zebra jukebox quiz " * 40)
    build_model(root / "draft", draft_tok, "gpt2", layers=1, seed=2)
    build_model(root / "wide-target", word_tokenizer(root / "words"), "llama", layers=1, seed=3)
    lower = build_tokenizer(root / "lower-tok", vocab_size=270)
    lower.backend_tokenizer.normalizer = normalizers.Lowercase()
    build_model(root / "lowercase", lower, "llama", layers=1, seed=4)
    return root


def word_tokenizer(directory) -> PreTrainedTokenizerFast:
    """2,000 made-up words and a few letters: a vocabulary the byte-level draft shares almost nothing of."""
    vocab = {EOS: 0, **{chr(97 + i): 1 + i for i in range(26)}, **{f"w{i:04d}": 27 + i for i in range(2000)}}
    raw = Tokenizer(models.WordLevel(vocab, unk_token=EOS))
    raw.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=raw, eos_token=EOS, bos_token=EOS)
    tokenizer.save_pretrained(directory)
    return tokenizer


@pytest.fixture(scope="module")
def tiny(tiny_dirs):
    return load_pair(str(tiny_dirs / "target"), str(tiny_dirs / "draft"), device="cpu", cross_vocab=True)


@pytest.mark.parametrize("method", [methods.TLI, methods.SLEM])
def test_greedy_across_tokenizers_equals_plain_decoding(tiny, method):
    plain = generate(tiny, PROMPT, RunSettings(method=methods.PLAIN, max_new_tokens=24, stop_at_eos=False))
    crossed = generate(tiny, PROMPT, RunSettings(method=method, k=3, max_new_tokens=24, stop_at_eos=False))
    assert crossed.output_ids == plain.output_ids
    assert crossed.totals.proposed > 0
    assert all(r.crossing is not None and r.crossing.method == method for r in crossed.rounds)
    assert trace_from_json(trace_to_json(crossed)) == crossed  # the translation survives the JSON round trip
    assert crossed.meta["intersection"] == tiny.crossing.intersection.size


def test_tli_rounds_record_the_translation_and_the_mass_lost(tiny):
    trace = generate(tiny, PROMPT, RunSettings(method=methods.TLI, k=3, max_new_tokens=12, stop_at_eos=False))
    texts = tiny.crossing.draft_texts
    for r in trace.rounds:
        c = r.crossing
        assert c.target_ids == tuple(p.token_id for p in r.positions)  # TLI proposes one target token per draft
        assert c.draft_texts == tuple(texts[d] for d in c.draft_ids) == c.target_texts
        assert all(0.0 <= lost <= 1.0 for lost in c.lost) and len(c.lost) == len(c.draft_ids)
        assert c.kept + c.fresh >= 1  # the draft's context covers the committed text again


@pytest.mark.slow
def test_sampled_tli_and_slem_follow_the_target_distribution(tiny):
    """At temperature 1: the first token of 400 TLI runs (each a judged draft) passes a χ² goodness-of-fit test
    against the target's exact p, and the first two tokens of TLI and SLEM runs match plain runs' (homogeneity)."""
    ids = encode_prompt(tiny, PROMPT)
    sampling = SamplingSettings(1.0, top_k=4)
    counts = {name: Counter() for name in (methods.PLAIN, methods.TLI, methods.SLEM)}
    for seed in range(400):
        for name in counts:
            settings = RunSettings(method=name, k=2, sampling=sampling, max_new_tokens=2, seed=seed, stop_at_eos=False)
            counts[name][tuple(t for r in decode_rounds(tiny, ids, settings) for t in r.committed)] += 1
    with torch.inference_mode():
        logits = tiny.target(torch.tensor([ids])).logits[0, -1, : tiny.vocab_size]
    p = logits_to_probs(logits, sampling).double()
    first = Counter()
    for seq, n in counts[methods.TLI].items():
        first[seq[0]] += n
    observed = torch.zeros_like(p)
    for token, n in first.items():
        observed[token] = n
    assert chi2_goodness_of_fit(observed, p).p_value > 1e-4
    keys = sorted(set().union(*counts.values()))
    plain = torch.tensor([counts[methods.PLAIN][k] for k in keys], dtype=torch.float64)
    for name in (methods.TLI, methods.SLEM):
        other = torch.tensor([counts[name][k] for k in keys], dtype=torch.float64)
        assert chi2_homogeneity(plain, other).p_value > 1e-4, name


def test_an_intersection_under_five_percent_is_refused_with_the_figure(tiny_dirs):
    with pytest.raises(IncompatiblePairError, match=r"spell only [\d,]+ tokens the same way, \d+\.\d% of the target"):
        load_pair(str(tiny_dirs / "wide-target"), str(tiny_dirs / "draft"), device="cpu", cross_vocab=True)


def test_a_tokenizer_that_does_not_round_trip_text_is_named(tiny_dirs):
    with pytest.raises(IncompatiblePairError, match=r"does not give back the text.*normaliser \(Lowercase\)"):
        load_pair(str(tiny_dirs / "target"), str(tiny_dirs / "lowercase"), device="cpu", cross_vocab=True)


def test_methods_that_compare_tokens_refuse_a_draft_with_another_tokenizer(tiny, tiny_dirs):
    with pytest.raises(SettingsError, match="speaks another tokenizer.*tli or slem"):
        generate(tiny, PROMPT, RunSettings(method=methods.DRAFT, max_new_tokens=4))
    with pytest.raises(IncompatiblePairError, match="different tokenizers"):  # today's path, unchanged
        load_pair(str(tiny_dirs / "target"), str(tiny_dirs / "draft"), device="cpu")
    same = load_pair(str(tiny_dirs / "target"), str(tiny_dirs / "target"), device="cpu", cross_vocab=True)
    assert same.crossing is None
    alone = load_pair(str(tiny_dirs / "target"), None, device="cpu", cross_vocab=True)  # the app asks so always
    assert alone.crossing is None and alone.draft is None
    with pytest.raises(SettingsError, match="tokenizer of its own"):
        generate(same, PROMPT, RunSettings(method=methods.TLI, max_new_tokens=4))


@pytest.mark.slow
def test_smollm2_drafted_by_the_pystdlib_draft_equals_plain_decoding():
    """The real pair that needs it: SmolLM2-135M-Instruct (49,152 tokens) and the bundled draft (8,192 code tokens),
    loaded once; greedy TLI and SLEM give plain decoding's 24 tokens."""
    from specviz.engine.decode import chat_wrapped
    from specviz.engine.loading.catalogue import find_pair

    target, _ = find_pair("smollm2").sources()
    pair = load_pair(target, BUNDLED_DRAFT, device="cpu", cross_vocab=True)
    assert pair.crossing.intersection.size > 0.05 * 49152
    prompt = chat_wrapped(pair, "Write a Python function that reverses a list.")
    plain = generate(pair, prompt, RunSettings(method=methods.PLAIN, max_new_tokens=24))
    for name in (methods.TLI, methods.SLEM):
        trace = generate(pair, prompt, RunSettings(method=name, k=4, max_new_tokens=24))
        assert trace.output_ids == plain.output_ids, name
        assert trace.totals.accepted > 0, name


def test_hugging_face_universal_assisted_generation_runs_beside_them(tiny):
    """transformers' lane for such a draft (assistant_model + tokenizer + assistant_tokenizer): greedy (its SLEM)
    gives plain decoding's tokens; sampled (its TLI) prunes a copy of the draft, never the shared one."""
    from specviz.engine.compare import hf_generate

    ids = encode_prompt(tiny, PROMPT)
    greedy = RunSettings(method=methods.PLAIN, max_new_tokens=16, stop_at_eos=False)
    plain = generate(tiny, PROMPT, greedy)
    assert hf_generate(tiny, ids, greedy, methods.HF_UAG).output_ids == plain.output_ids
    head = tiny.draft.get_output_embeddings().weight.shape
    sampled = RunSettings(method=methods.PLAIN, max_new_tokens=8, stop_at_eos=False, sampling=SamplingSettings(1.0))
    for seed in (0, 1):
        assert len(hf_generate(tiny, ids, replace(sampled, seed=seed), methods.HF_UAG).output_ids) == 8
    assert tiny.draft.get_output_embeddings().weight.shape == head
    with pytest.raises(SettingsError, match="hf_uag"):
        hf_generate(tiny, ids, greedy, methods.HF_ASSISTED)
