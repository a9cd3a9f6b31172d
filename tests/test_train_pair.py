"""`train --pair` (train/pair.py) on a tiny chat target the tests build: the data stage writes its own prompts and
greedy answers with the teacher's top-k aligned to them, resumes without redoing shards, and the draft and EAGLE-3
stages train, resume and export what the engine loads; the held-out alpha follows greedy speculative decoding."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from specviz.train.answer_store import store_info
from specviz.train.chat_data import user_prefix
from specviz.train.draft_pair import alpha_tau, choose_vocab, read_shards, rounds, trimmed_ids
from specviz.train.pair import main
from tests.tiny_models import EOS, build_model, build_tokenizer

TEMPLATE = (
    "{% for m in messages %}" + EOS + "{{ m['role'] }}\n{{ m['content'] }}" + EOS + "\n{% endfor %}"
    "{% if add_generation_prompt %}" + EOS + "assistant\n{% endif %}"
)


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("pair")
    tok = build_tokenizer(root / "target")
    tok.chat_template = TEMPLATE
    build_model(root / "target", tok, layers=4, padded_vocab=0)
    heldout = root / "heldout.jsonl"
    heldout.write_text("".join(json.dumps({"prompt": p, "kind": "code"}) + "\n" for p in ("def add(a, b):", "The fox")))
    base = ["--pair", "tiny", "--target", str(root / "target"), "--work-dir", str(root / "work"), "--threads", "1"]
    base += ["--heldout", str(heldout), "--context", "48"]
    data = ["--tokens", "120", "--data-batch", "6", "--prompt-tokens", "8", "--answer-tokens", "12"]
    assert main(["data", *base, *data, "--shard-samples", "4"]) == 0
    return root, base, data


def test_the_magpie_prompt_is_the_templates_text_before_the_user_message(setup):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(setup[0] / "target")
    assert user_prefix(tok) == EOS + "user\n"


def test_the_data_stage_fills_the_store_then_a_later_run_appends_with_the_next_seed(setup):
    root, base, data = setup
    store = root / "work" / "data"
    info = store_info(store)
    assert info.answer_tokens >= 120 and len(info.shards) >= 2 and {s["seed"] for s in info.shards} == {1234}
    shards = read_shards(store)  # what the training stages read: hard labels, the answer token itself
    answers = np.concatenate([t[a:] for t, a in zip(shards.tokens, shards.answer_at)])
    assert len(answers) == len(shards.topk_ids) == info.answer_tokens
    assert (shards.topk_ids[:, 0] == answers).all() and (shards.topk_probs == 1).all()
    before = [p.stat().st_mtime_ns for p in sorted(store.glob("answers-*.npz"))]
    assert main(["data", *base, *data]) == 0  # the goal is met: nothing is generated again
    assert [p.stat().st_mtime_ns for p in sorted(store.glob("answers-*.npz"))] == before
    assert main(["data", *base, *data[2:], "--tokens", str(info.answer_tokens + 20), "--shard-samples", "50"]) == 0
    grown = store_info(store)
    assert grown.answer_tokens >= info.answer_tokens + 20 and grown.shards[: len(info.shards)] == info.shards
    assert grown.shards[-1]["seed"] == 1235  # a new run draws new prompts


def test_rounds_accept_drafts_up_to_the_first_miss_then_the_targets_token():
    m = np.array([1, 1, 0, 1, 1, 1, 1, 1, 0], dtype=bool)
    # round 1: 2 accepted, the miss at 2 is the target's token; round 2 at 3: 4 accepted (K = 4), token 7 is the
    # target's bonus; round 3 at 8: 0 accepted
    assert rounds(m, 4) == (6, 4 + 4 + 1, 3)
    stats = alpha_tau([m], 4)
    assert stats["alpha_k4"] == round(6 / 9, 4) and stats["tau_k4"] == 3.0


def test_the_trimmed_vocabulary_is_the_smallest_size_covering_the_targets_choices():
    counts = np.zeros(5000, dtype=np.int64)
    counts[:1500] = np.arange(1500, 0, -1)
    top1 = np.arange(1500)
    n, shares = choose_vocab(counts, top1, 0.98)
    assert n == 2048 and shares[1024] == round(1024 / 1500, 4)
    vocab_ids = trimmed_ids(counts, 16, always=(4999,))
    assert len(vocab_ids) == 16 and 4999 in vocab_ids and (np.diff(vocab_ids) > 0).all()


def test_the_draft_starts_from_the_targets_layers():
    from specviz.train.draft_pair import source_layers

    assert source_layers(30, 2) == [0, 29] and source_layers(30, 2, "first") == [0, 1]
    assert source_layers(4, 4) == [0, 1, 2, 3]


def test_the_draft_trains_resumes_and_exports_a_model_the_engine_loads(setup):
    root, base, _ = setup
    work, out = root / "work", root / "work" / "out"
    assert main(["draft", *base, "--steps", "6", "--minutes", "0", "--draft-layers", "2"]) == 0  # stopped at once
    assert (work / "draft" / "ckpt.pt").exists() and not (work / "draft" / "result.json").exists()
    assert main(["draft", *base, "--steps", "6", "--minutes", "2", "--draft-layers", "2"]) == 0  # resumed, finished
    result = json.loads((work / "draft" / "result.json").read_text())
    assert result["steps"] == 6 and result["finished"]
    assert "alpha_k4" in result["history"][-1]
    # exported as a pair ships it: the trained tensors alone, the embeddings being the target's frozen rows
    from safetensors.torch import load_file

    from specviz.engine.loading.models import load_pair
    from specviz.engine.loading.shipped import LAYERS_FILE

    assert sorted(p.name for p in (out / "draft").iterdir()) == [
        "config.json", LAYERS_FILE, "token_counts.json", "training.json"
    ]  # fmt: skip
    assert not any("embed_tokens" in name for name in load_file(str(out / "draft" / LAYERS_FILE)))
    pair = load_pair(str(root / "target"), str(work / "draft-whole"), device="cpu")  # the whole model beside it
    assert pair.draft.config.num_hidden_layers == 2
    counts = json.loads((out / "draft" / "token_counts.json").read_text())
    assert counts["recommended"] == len(json.loads((work / "draft_vocab.json").read_text())["kept"])
    emb_t = pair.target.get_input_embeddings().weight.float()
    emb_d = pair.draft.get_input_embeddings().weight.float()
    assert torch.allclose(emb_t, emb_d, atol=1e-2)  # frozen: equal (up to bfloat16) after training


def test_a_resumed_run_starts_from_the_shipped_draft_and_replaces_it_only_if_held_out_agreement_rose(setup):
    from specviz.engine.loading.shipped import LAYERS_FILE
    from specviz.train.draft_pair import alpha_tau, draft_matches
    from specviz.train.pair_target import load_target
    from specviz.train.resume import RUNS_START, load_shipped_draft, shipped_vocab

    root, base, _ = setup
    work, out = root / "work", root / "work" / "out"
    layers = out / "draft" / LAYERS_FILE
    shipped_bytes = layers.read_bytes()
    target, _ = load_target(SimpleNamespace(target=str(root / "target"), device="cpu"))
    refs = [(r["prompt_ids"], r["answer_ids"]) for r in json.loads((work / "heldout.json").read_text())]
    vocab_ids = torch.from_numpy(shipped_vocab(out / "draft", target.config.vocab_size))
    shipped = alpha_tau(draft_matches(load_shipped_draft(out / "draft", target), vocab_ids, refs), 4)
    for run in (1, 2):
        assert main(["draft", *base, "--resume", "--out-dir", str(out), "--steps", "4", "--minutes", "1"]) == 0
        runs = json.loads((out / "draft" / "training.json").read_text())["runs"]
        row = runs[-1]
        assert len(runs) == run and row["steps"] == 4 and row["answer_tokens"] > 0
        rose = row["after"]["greedy_agreement"] > row["before"]["greedy_agreement"]
        assert row["shipped"] == rose == (layers.read_bytes() != shipped_bytes)
        now = alpha_tau(draft_matches(load_shipped_draft(out / "draft", target), vocab_ids, refs), 4)
        assert now == (row["after"] if rose else shipped)  # after is measured on what ships (bfloat16)
        assert row["before"] == shipped
        shipped, shipped_bytes = now, layers.read_bytes()
    card = (out / "training.md").read_text()
    assert RUNS_START in card and card.count("| yes |") + card.count("| no |") == 2


def test_resume_refuses_a_missing_draft_and_other_stages_in_one_line(setup, tmp_path):
    root, base, _ = setup
    with pytest.raises(SystemExit, match="ships no draft"):
        main(["draft", *base, "--resume", "--out-dir", str(tmp_path)])
    with pytest.raises(SystemExit, match="use it with the draft stage"):
        main(["eagle3", *base, "--resume"])


def test_the_shipped_draft_is_replaced_only_when_held_out_agreement_rises():
    from specviz.train.resume import should_ship

    assert should_ship({"greedy_agreement": 0.50}, {"greedy_agreement": 0.51})
    assert not should_ship({"greedy_agreement": 0.50}, {"greedy_agreement": 0.50})  # equal: keep what ships
    assert not should_ship({"greedy_agreement": 0.50}, {"greedy_agreement": 0.40})


def test_the_eagle3_head_trains_on_the_same_samples_and_the_card_names_both(setup):
    root, base, _ = setup
    assert main(["eagle3", *base, "--steps", "3", "--minutes", "2", "--batch", "2"]) == 0
    out = root / "work" / "out"
    training = json.loads((out / "eagle3" / "training.json").read_text())
    assert training["steps"] == 3 and "greedy_agreement" in training["held_out_shipped"]
    assert main(["card", *base]) == 0
    card = (out / "training.md").read_text()
    assert "## draft" in card and "## eagle3" in card and "alpha_k4" in card


def test_an_unknown_pair_is_refused_in_one_line():
    with pytest.raises(SystemExit, match="no pair named"):
        main(["data", "--pair", "nosuch"])
