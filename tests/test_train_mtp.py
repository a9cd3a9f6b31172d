"""The `train-tiny mtp` stage (train/mtp.py over train/heads.py): depth 1 reads the target's feature and depth 2 the
module's own output, each scored against the target's distribution at its row; the stage trains, exports and skips a
finished run."""

from __future__ import annotations

import json

import pytest
import torch
from test_train_medusa import _workdirs

from specviz.engine.heads.mtp import is_mtp, load_mtp, new_mtp
from specviz.engine.loading.models import load_model
from specviz.train.mtp import DEPTH2_WEIGHT, mtp_losses, train_mtp


@pytest.fixture(scope="module")
def target(model_dirs):
    return load_model(str(model_dirs["llama-target"]), torch.device("cpu"), torch.float32)


def test_depth_1_and_2_are_scored_against_the_targets_distribution_two_and_three_tokens_on(target):
    """Worked out with one target pass per prefix: depth 1 at row t reads (f_t, x_{t+1}), its label p over x_{t+2};
    depth 2 reads (h'_{t+1}, x_{t+2}), its label p over x_{t+3}."""
    torch.manual_seed(0)
    module = new_mtp(target, seed=1)
    x = torch.randint(0, target.config.vocab_size, (1, 8))  # T + 1 = 8 tokens
    loss, ce1, ce2, *_ = mtp_losses(module, target, x)
    with torch.no_grad():
        f = target(input_ids=x, output_hidden_states=True).hidden_states[-1]  # (1, 8, H)
        emb = target.get_input_embeddings()(x)
        h1 = module(emb[:, 1:], f[:, :-1])  # (1, 7, H)
        h2 = module(emb[:, 2:], h1[:, :-1])  # (1, 6, H)
        rows1, rows2 = [], []
        for t in range(7):
            p = target(input_ids=x[:, : t + 2]).logits[0, -1].softmax(-1)  # over x_{t+2}
            rows1.append(-(p * target.lm_head(module.normed(h1[0, t])).log_softmax(-1)).sum())
        for t in range(6):
            p = target(input_ids=x[:, : t + 3]).logits[0, -1].softmax(-1)  # over x_{t+3}
            rows2.append(-(p * target.lm_head(module.normed(h2[0, t])).log_softmax(-1)).sum())
    torch.testing.assert_close(ce1, torch.stack(rows1).mean(), atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(ce2, torch.stack(rows2).mean(), atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(loss, ce1 + DEPTH2_WEIGHT * ce2)


def test_the_stage_trains_exports_and_skips_a_finished_run(model_dirs, target, tmp_path):
    import argparse

    out, work = _workdirs(model_dirs, tmp_path)
    args = argparse.Namespace(
        out_dir=out, batch_size=2, context=16, seed=0, eval_minutes=10.0, ckpt_minutes=10.0,
        mtp_minutes=5.0, mtp_steps=5, mtp_lr=1e-2,
    )  # fmt: skip
    lines = []
    train_mtp(args, work, "cpu", lines.append)
    assert is_mtp(out / "mtp")
    module = load_mtp(out / "mtp", target)
    fresh = new_mtp(target, seed=0)
    assert not torch.equal(module.eh_proj.weight.float(), fresh.eh_proj.weight.to(torch.bfloat16).float())  # trained
    training = json.loads((out / "mtp" / "training.json").read_text())
    assert training["steps"] == 5 and [row["step"] for row in training["history"]] == [0, 5]
    assert {"ce", "ce_depth2", "greedy_agreement", "greedy_agreement_depth2"} <= set(training["history"][-1])
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["mtp"]["curve"] == training["history"]
    lines.clear()
    train_mtp(args, work, "cpu", lines.append)
    assert any("already trained" in line for line in lines)
