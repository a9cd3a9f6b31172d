"""The real pair's data kept in the repository (train/answer_store.py) and the decoder that writes it
(train/answer_loop.py): shards round-trip and append, a foreign store is refused in one line, and the batched decoder's
answers are the target's own greedy answers, whatever else shares the batch."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
import torch

from specviz.errors import SpecvizError
from specviz.train.answer_loop import (
    AnswerConfig,
    answer_stream,
    decode_attention,
    register_decode_attention,
    template_of,
)
from specviz.train.answer_store import (
    MANIFEST,
    Sample,
    append_shard,
    next_run_seed,
    read_manifest,
    read_samples,
    store_info,
)
from tests.tiny_models import EOS, build_model, build_tokenizer

TEMPLATE = (
    "{% for m in messages %}" + EOS + "{{ m['role'] }}\n{{ m['content'] }}" + EOS + "\n{% endfor %}"
    "{% if add_generation_prompt %}" + EOS + "assistant\n{% endif %}"
)


def samples(n: int, offset: int = 0) -> list[Sample]:
    return [
        Sample((1, 2, 3 + i), tuple(range(10 + offset + i, 14 + offset + i * 2)), f"prompt {offset + i} é")
        for i in range(n)
    ]


def test_shards_round_trip_and_a_later_run_appends_after_them(tmp_path):
    store = tmp_path / "data"
    first, second = samples(3), samples(2, offset=100)
    append_shard(store, first, "tiny", 70000 - 4464, seed=5, part=0)  # 65,536 ids: uint16
    assert read_samples(store, verify=True) == first
    assert next_run_seed(store, 5) == 6 and next_run_seed(tmp_path / "none", 5) == 5
    entry = append_shard(store, second, "tiny", 65536, seed=6, part=0, dtype="float32")
    assert entry["file"] == "answers-00001.npz" and entry["dtype"] == "float32"
    assert read_samples(store) == first + second
    info = store_info(store)
    assert info.samples == 5 and info.answer_tokens == sum(len(s.answer_ids) for s in first + second)
    with np.load(store / "answers-00000.npz") as z:
        assert z["tokens"].dtype == np.uint16 and list(z["seed"]) == [5, 0]
    assert not list(store.glob(".*"))  # no temporary file left behind


def test_a_foreign_newer_or_damaged_store_is_refused_in_one_line(tmp_path):
    store = tmp_path / "data"
    with pytest.raises(SpecvizError, match="no answer store"):
        read_samples(store)
    append_shard(store, samples(1), "tiny", 300, seed=1, part=0)
    with pytest.raises(SpecvizError, match="vocabulary"):
        append_shard(store, samples(1), "other", 500, seed=1, part=0)
    with pytest.raises(SpecvizError, match="outside the vocabulary"):
        append_shard(store, [Sample((1,), (400,), "x")], "tiny", 300, seed=1, part=0)
    (store / "answers-00000.npz").write_bytes(b"not the shard")
    with pytest.raises(SpecvizError, match="sha256"):
        read_samples(store, verify=True)
    body = read_manifest(store)
    (store / MANIFEST).write_text(json.dumps({**body, "version": 99}))
    with pytest.raises(SpecvizError, match="version 99"):
        read_samples(store)
    (store / MANIFEST).write_text(json.dumps({"format": "else"}))
    with pytest.raises(SpecvizError, match="not a specviz answer store"):
        read_samples(store)


def test_decode_attention_equals_sdpa_for_one_query_with_padding():
    g = torch.Generator().manual_seed(0)
    q, k, v = (
        torch.randn(3, 4, 1, 8, generator=g),
        torch.randn(3, 2, 7, 8, generator=g),
        torch.randn(3, 2, 7, 8, generator=g),
    )
    mask = torch.ones(3, 1, 1, 7, dtype=torch.bool)
    mask[0, ..., :3] = False  # row 0: left padding; row 2: holes, as a refilled slot has
    mask[2, ..., 1:5] = False
    module = torch.nn.Module()
    module.num_key_value_groups = 2
    out, _ = decode_attention(module, q, k, v, mask, scaling=0.3)  # (B, 1, H, D)
    ref = torch.nn.functional.scaled_dot_product_attention(
        q, k.repeat_interleave(2, 1), v.repeat_interleave(2, 1), attn_mask=mask, scale=0.3
    )  # (B, H, 1, D)
    assert torch.allclose(out, ref.transpose(1, 2), atol=1e-5)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    root = tmp_path_factory.mktemp("loop")
    tok = build_tokenizer(root)
    tok.chat_template = TEMPLATE
    tok.save_pretrained(root)
    build_model(root, tok, layers=2, padded_vocab=0)
    tok = AutoTokenizer.from_pretrained(root)
    fast = AutoModelForCausalLM.from_pretrained(root, attn_implementation=register_decode_attention()).eval()
    plain = AutoModelForCausalLM.from_pretrained(root, attn_implementation="sdpa").eval()
    return tok, fast, plain


def test_the_batched_decoder_answers_as_generate_does_one_prompt_at_a_time(tiny):
    tok, fast, plain = tiny
    cfg = AnswerConfig(batch=4, prompt_tokens=6, answer_tokens=9, seed=3, compact_every=2)
    got = list(itertools.islice(answer_stream(fast, tok, cfg), 10))  # 10 samples through 4 slots: refills
    eot = tok.convert_tokens_to_ids(EOS)
    tpl = template_of(tok)
    for s in got:
        assert s.prompt_ids[: len(tpl.prefix)] == tpl.prefix and s.prompt_ids[-len(tpl.header) :] == tpl.header
        x = torch.tensor([s.prompt_ids])
        ref = plain.generate(x, attention_mask=torch.ones_like(x), max_new_tokens=9, do_sample=False,
                             eos_token_id=eot, pad_token_id=eot)[0, x.shape[1]:].tolist()  # fmt: skip
        assert list(s.answer_ids) == ref[: len(s.answer_ids)] and (s.answer_ids[-1] == eot or len(s.answer_ids) == 9)
        assert len(s.prompt_ids) <= len(tpl.prefix) + 6 + len(tpl.header)  # at most 6 prompt tokens
    again = list(itertools.islice(answer_stream(fast, tok, cfg), 10))
    assert again == got  # the same seed, the same samples in the same order
    other = list(itertools.islice(answer_stream(fast, tok, AnswerConfig(4, 6, 9, seed=4)), 10))
    assert [s.prompt_ids for s in other] != [s.prompt_ids for s in got]


def test_bad_decoder_settings_are_refused():
    with pytest.raises(SpecvizError, match="at least 1"):
        AnswerConfig(batch=0, prompt_tokens=4, answer_tokens=4, seed=0)
