"""Training-time test (train/eagle3.py): the unrolled steps see exactly what the head sees when it drafts through its
cache, the loss weighs step k by 0.8^k against the target's softmax on the draft vocabulary, and a few steps of
training lower it."""

from __future__ import annotations

import pytest
import torch

from specviz.engine.heads.eagle3 import new_head3
from specviz.train.eagle3 import DECAY, TTT_STEPS, ttt_losses, unroll


@pytest.fixture(scope="module")
def target(load):
    return load("llama-target").target


def test_each_unrolled_step_equals_drafting_through_the_cache_on_the_same_tokens(target):
    """Column t at step k = the head after reading the real pairs 0..t, then its own outputs with x_{t+2}..x_{t+1+k}."""
    head = new_head3(target, torch.arange(0, target.config.vocab_size, 2), seed=1).eval()
    torch.manual_seed(0)
    x = torch.randint(0, 200, (1, 14))
    with torch.no_grad():
        out = unroll(head, target, x)
        states = target(input_ids=x, output_hidden_states=True).hidden_states
        fused = head.fuse(torch.cat([states[i] for i in head.layers_read], dim=-1))  # (1, 14, H)
        embeds = target.get_input_embeddings()(x)
        for t in (0, 4, 9):
            cache = head.new_cache()
            normed, s = head(embeds[:, 1 : t + 2], fused[:, : t + 1], cache)
            torch.testing.assert_close(head.lm_head(normed[0, -1]), out[0][0][0, t], atol=1e-5, rtol=1e-5)
            s = s[:, -1:]
            for k in range(1, TTT_STEPS):
                normed, s = head(embeds[:, t + 1 + k : t + 2 + k], s, cache)  # the head's own output, fed back
                torch.testing.assert_close(head.lm_head(normed[0, -1]), out[k][0][0, t], atol=1e-5, rtol=1e-5)
    assert [q.shape[1] for q, _ in out] == [13 - k for k in range(TTT_STEPS)]  # step k has no label past row T


def test_the_loss_is_the_decayed_sum_of_cross_entropies_on_the_draft_vocabulary(target):
    head = new_head3(target, torch.arange(0, target.config.vocab_size, 2), seed=2)
    x = torch.randint(0, 200, (2, 12))
    with torch.no_grad():
        loss, ce0, _ = ttt_losses(head, target, x)
        by_hand = 0.0
        for k, (q, p) in enumerate(unroll(head, target, x)):
            target_p = torch.softmax(p[..., head.target_ids], -1)
            by_hand += DECAY**k * float(-(target_p * torch.log_softmax(q, -1)).sum(-1).mean())
    assert float(loss) == pytest.approx(by_hand, rel=1e-5) and float(ce0) < float(loss)


def test_a_few_steps_of_training_time_test_lower_the_loss(target):
    head = new_head3(target, torch.arange(0, target.config.vocab_size, 2), seed=3)
    x = torch.randint(0, 200, (2, 12))
    opt = torch.optim.AdamW(head.parameters(), lr=3e-3)
    losses = []
    for _ in range(8):
        loss = ttt_losses(head, target, x)[0]
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    assert losses[-1] < 0.8 * losses[0]


def test_a_head_started_from_the_target_reads_features_as_the_target_does(target):
    """init_from_target: fc passes the deepest state read through, and norm + lm_head are the target's final norm and
    its LM head's rows for the draft vocabulary, so the head's first logits are the target's on those tokens."""
    from specviz.train.eagle3 import init_from_target

    kept = torch.arange(0, target.config.vocab_size, 3)
    head = new_head3(target, kept, seed=4)
    init_from_target(head, target)
    states = torch.randn(2, 5, len(head.layers_read) * target.config.hidden_size)
    width = target.config.hidden_size
    with torch.no_grad():
        torch.testing.assert_close(head.fuse(states), states[..., -width:])
        feature = torch.randn(2, 5, width)
        ours = head.lm_head(head.norm(feature))
        theirs = target.lm_head(target.model.norm(feature))[..., kept]
    torch.testing.assert_close(ours, theirs)
    last = target.model.layers[-1]
    torch.testing.assert_close(head.midlayer.mlp.down_proj.weight, last.mlp.down_proj.weight)
    torch.testing.assert_close(head.midlayer.self_attn.q_proj.weight[:, width:], last.self_attn.q_proj.weight)


def test_an_export_round_trips_every_tensor_the_head_trained_its_lm_head_included(target, tmp_path):
    from specviz.engine.heads.eagle3 import load_head3, save_head3
    from specviz.train.eagle3 import init_from_target

    head = new_head3(target, torch.arange(0, target.config.vocab_size, 2), seed=3)
    init_from_target(head, target)
    trained = {name: p for name, p in head.named_parameters() if p.requires_grad}  # what train_head optimises
    opt = torch.optim.AdamW(trained.values(), lr=1e-2)
    loss = ttt_losses(head, target, torch.randint(0, 200, (2, 12)))[0]
    loss.backward()
    opt.step()  # every trained tensor now differs from its start
    assert "lm_head.weight" in trained
    back = dict(load_head3(save_head3(head, tmp_path / "eagle3", dtype=torch.float32), target).named_parameters())
    for name, tensor in trained.items():
        assert name in back, f"{name} was trained but not exported"
        assert torch.equal(back[name].detach(), tensor.detach()), name
