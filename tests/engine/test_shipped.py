"""Drafters shipped for a converted target: a draft without its embeddings, assembled with the target's in the cache,
and feature heads found in the pair's folder (engine/loading/shipped.py), on tiny checkpoints the test builds."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace

import pytest
import torch
from transformers import AutoModelForCausalLM

from specviz import methods
from specviz.engine.loading import shipped
from specviz.engine.loading.catalogue import find_pair
from specviz.engine.loading.install import DONE_FILE, SMOLLM2_GGUF
from specviz.engine.loading.models import find_heads
from specviz.train.draft_pair import new_draft
from tests.tiny_models import build_model, build_tokenizer

TINY = replace(SMOLLM2_GGUF, name="tiny-instruct", pair="tiny", sha256="0" * 64)


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A converted tiny target in a cache, its pair's shipped folder, and a whole draft trained for it (frozen
    embeddings, its layers rounded to bfloat16 as they ship)."""
    monkeypatch.setenv("SPECVIZ_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(shipped, "SHIPPED_ROOT", tmp_path / "assets")
    monkeypatch.setattr(shipped, "GGUF_PACKAGES", (TINY,))
    target_dir = tmp_path / "cache" / "models" / TINY.name
    build_model(target_dir, build_tokenizer(tmp_path / "tok"), layers=3)
    (target_dir / DONE_FILE).write_text(json.dumps({"sha256": TINY.sha256}))
    target = AutoModelForCausalLM.from_pretrained(target_dir, dtype=torch.float32)
    draft = new_draft(target, layers=2)
    with torch.no_grad():
        for name, p in draft.named_parameters():
            if "embed_tokens" not in name:
                p.copy_(p.to(torch.bfloat16).to(torch.float32))
    whole = tmp_path / "whole"
    draft.save_pretrained(whole)
    shipped.split_draft(whole, tmp_path / "assets" / "tiny" / "draft")
    return target_dir, target, draft


def test_the_shipped_draft_holds_no_embeddings_and_assembles_into_the_same_model(home):
    target_dir, target, draft = home
    layers = shipped.shipped_draft(TINY) / shipped.LAYERS_FILE
    from safetensors.torch import load_file

    assert not any("embed_tokens" in k or k == "lm_head.weight" for k in load_file(str(layers)))
    assert not shipped.is_assembled(TINY)
    folder = shipped.ensure_draft(TINY)
    assert folder == shipped.draft_dir(TINY) and shipped.is_assembled(TINY)
    assembled = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    ids = torch.tensor([[1, 5, 9, 12, 3]])
    with torch.no_grad():
        assert torch.equal(assembled(ids).logits, draft(ids).logits)  # the target's rows, the shipped layers
    assert (folder / "tokenizer.json").is_file()  # the target's tokenizer beside it


def test_new_shipped_layers_are_assembled_again(home, tmp_path):
    shipped.ensure_draft(TINY)
    layers = shipped.shipped_draft(TINY) / shipped.LAYERS_FILE
    from safetensors.torch import load_file, save_file

    tensors = load_file(str(layers))
    name = next(k for k in tensors if k.endswith("norm.weight"))
    tensors[name] = tensors[name] * 2
    save_file(tensors, str(layers))
    assert not shipped.is_assembled(TINY)
    folder = shipped.ensure_draft(TINY)
    reloaded = load_file(str(folder / "model.safetensors"))
    assert torch.equal(reloaded[name], tensors[name].to(torch.float32))


def test_a_pair_that_ships_no_draft_gives_none(home, tmp_path):
    shutil.rmtree(tmp_path / "assets" / "tiny" / "draft")
    assert shipped.ensure_draft(TINY) is None and not shipped.is_assembled(TINY)


def test_heads_are_found_in_the_pair_folder_of_a_converted_target_only(home, tmp_path):
    from specviz.engine.heads.eagle3 import new_head3, save_head3

    target_dir, target, _ = home
    save_head3(new_head3(target, torch.arange(32)), tmp_path / "assets" / "tiny" / "eagle3")
    assert shipped.drafters_home(target_dir) == tmp_path / "assets" / "tiny"
    assert find_heads(str(target_dir), None) == {methods.EAGLE3: str(tmp_path / "assets" / "tiny" / "eagle3")}
    (target_dir / DONE_FILE).write_text(json.dumps({"sha256": "f" * 64}))  # converted from another file
    assert shipped.drafters_home(target_dir) is None and find_heads(str(target_dir), None) == {}


def test_smollm2_drafts_with_the_drafters_it_ships():
    spec = find_pair("smollm2")
    assert spec.drafters[:2] == (methods.DRAFT, methods.TREE)
    assert spec.draft_source == str(shipped.draft_dir(SMOLLM2_GGUF))
    assert (shipped.SHIPPED_ROOT / "smollm2" / "draft" / shipped.LAYERS_FILE).stat().st_size < 20e6
