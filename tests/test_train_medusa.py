"""The `train-tiny medusa` stage (train/medusa.py over train/heads.py, the loop the `eagle` stage shares): each head
is scored against the target's distribution at its own offset, and the stage trains, exports in vLLM's format and
skips a finished run."""

from __future__ import annotations

import argparse
import json

import numpy as np
import pytest
import torch

from specviz.engine.heads.eagle import is_eagle_head, load_eagle_head
from specviz.engine.heads.medusa import is_medusa_head, load_medusa, new_medusa
from specviz.engine.loading.models import load_model
from specviz.train.eagle import train_eagle
from specviz.train.medusa import DECAY, medusa_losses, train_medusa

CODE = (
    "def add(a, b):\n    return a + b\n\n\nclass Stack:\n    def push(self, item):\n        self.items.append(item)\n"
)


@pytest.fixture(scope="module")
def target(model_dirs):
    return load_model(str(model_dirs["llama-target"]), torch.device("cpu"), torch.float32)


def test_head_i_at_row_t_is_scored_against_the_targets_distribution_over_x_t_plus_2_plus_i(target):
    """Worked out with one target pass per prefix: head i reads h_t and its label is p(x_{t+2+i} | x_0..x_{t+1+i})."""
    torch.manual_seed(0)
    heads = new_medusa(target, 3)
    with torch.no_grad():
        for block in heads.blocks:
            block.layers[0].weight.normal_(std=0.3)
    x = torch.randint(0, target.config.vocab_size, (1, 9))  # T + 1 = 9 tokens
    loss, ce, greedy, overlap = medusa_losses(heads, target, x)
    with torch.no_grad():
        h = target(input_ids=x, output_hidden_states=True).hidden_states[-1][0]  # (9, H)
        expected = []
        for i in range(3):
            rows = []
            for t in range(9 - 3):  # the rows every head has a label for
                p = target(input_ids=x[:, : t + 2 + i]).logits[0, -1].softmax(-1)  # over x_{t+2+i}
                log_q = heads(h[t])[i].log_softmax(-1)
                rows.append(-(p * log_q).sum())
            expected.append(torch.stack(rows).mean())
    torch.testing.assert_close(ce, torch.stack(expected), atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(loss, sum(DECAY**i * expected[i] for i in range(3)), atol=1e-4, rtol=1e-4)
    assert greedy.shape == overlap.shape == (3,) and bool(((overlap > 0) & (overlap <= 1)).all())


def _args(out, steps) -> argparse.Namespace:
    return argparse.Namespace(
        out_dir=out, batch_size=2, context=16, seed=0, eval_minutes=10.0, ckpt_minutes=10.0,
        medusa_minutes=5.0, medusa_steps=steps, medusa_lr=1e-2, eagle_minutes=5.0, eagle_steps=steps, eagle_lr=1e-2,
    )  # fmt: skip


def _workdirs(model_dirs, tmp_path):
    out, work = tmp_path / "out", tmp_path / "work"
    out.mkdir()
    (out / "target").symlink_to(model_dirs["llama-target"])
    (out / "manifest.json").write_text("{}")
    (work / "corpus").mkdir(parents=True)
    for split in ("train", "val_code"):
        docs = [{"kind": "code", "text": CODE * 3}] * 6 + [{"kind": "prose", "text": "Not code at all."}]
        (work / "corpus" / f"{split}.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    return out, work


def test_the_stage_trains_exports_vllms_format_and_skips_a_finished_run(model_dirs, target, tmp_path):
    out, work = _workdirs(model_dirs, tmp_path)
    lines = []
    train_medusa(_args(out, 6), work, "cpu", lines.append)

    assert is_medusa_head(out / "medusa")
    heads = load_medusa(out / "medusa", target)
    assert heads.num_heads == 4 and heads.shared_lm_head
    torch.testing.assert_close(heads.lm_heads[0].weight, target.lm_head.weight.to(torch.bfloat16).float())  # frozen
    assert any(float(block.layers[0].weight.abs().sum()) > 0 for block in heads.blocks)  # the blocks trained
    training = json.loads((out / "medusa" / "training.json").read_text())
    assert training["steps"] == 6 and training["heads"] == 4
    assert [row["step"] for row in training["history"]] == [0, 6]
    assert len(training["held_out_val_code_shipped"]["greedy_agreement"]) == 4
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["medusa"]["curve"] == training["history"] and "history" not in manifest["medusa"]
    assert np.fromfile(work / "medusa" / "train.bin", dtype=np.uint16).size > 0

    lines.clear()
    train_medusa(_args(out, 6), work, "cpu", lines.append)
    assert any("already trained" in line for line in lines)


def test_the_eagle_stage_trains_through_the_same_loop(model_dirs, target, tmp_path):
    out, work = _workdirs(model_dirs, tmp_path)
    train_eagle(_args(out, 4), work, "cpu", lambda line: None)
    assert is_eagle_head(out / "eagle")
    load_eagle_head(out / "eagle", target)
    training = json.loads((out / "eagle" / "training.json").read_text())
    assert training["steps"] == 4 and "SmoothL1" in training["loss"] and "feature_loss" in training["history"][-1]
    assert json.loads((out / "manifest.json").read_text())["eagle"]["curve"] == training["history"]
