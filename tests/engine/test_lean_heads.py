"""The feature heads' lean step (engine/heads/lean_heads.py) computes what their modules compute: for the shipped
EAGLE-1 and EAGLE-3 heads and MTP module on the bundled target (float32), the draft logits agree at the first draft
step, at later steps over a cache of several rows, over a multi-row pass and a tree depth; greedy runs at K = 4 equal
plain decoding and the hf-forward run token for token; the lean weights are built once per head and leave the head as it
was."""

from __future__ import annotations

import json

import pytest
import torch

from specviz import methods
from specviz.core.settings import FORWARD_AUTO, FORWARD_HF, FORWARD_LEAN, RunSettings
from specviz.engine import proposers
from specviz.engine.decode import generate
from specviz.engine.heads import lean_heads
from specviz.engine.loading.models import ASSETS, load_pair

TOL = 1e-4  # float32: the two paths add the same products in another order
HEADS = {name: proposers.proposer_class(name) for name in (methods.EAGLE, methods.EAGLE3, methods.MTP)}
CODE = [json.loads(line)["prompt"] for line in (ASSETS / "workloads" / "code.jsonl").read_text().splitlines()]
HELD_OUT = CODE[-2:]  # two held-out code prompts


@pytest.fixture(scope="module")
def bundled():
    return load_pair(device="cpu", draft=None, dtype="float32")


def close(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal within float32 tolerance; -inf (EAGLE-3's logits off its draft vocabulary) must sit at the same ids."""
    finite = torch.isfinite(a)
    return (
        a.shape == b.shape and torch.equal(finite, torch.isfinite(b)) and torch.allclose(a[finite], b[finite], atol=TOL)
    )


def both(pair, method: str):
    """The method's proposer on Hugging Face's forward (the head's modules) and on the lean one (its lean step)."""
    made = {
        kind: HEADS[method].for_run(proposers.RunContext(pair, RunSettings(method=method, forward=kind)))
        for kind in (FORWARD_HF, FORWARD_LEAN)
    }
    assert made[FORWARD_HF].runner.forward == FORWARD_HF and made[FORWARD_LEAN].runner.forward == FORWARD_LEAN
    return made[FORWARD_HF], made[FORWARD_LEAN]


def features(pair, proposer, ids: list[int]) -> torch.Tensor:
    """(layers, rows, H) the target's hidden states that the head reads, for every prompt row but the last."""
    states = pair.target(input_ids=torch.tensor([ids[:-1]]), output_hidden_states=True).hidden_states
    return torch.stack([states[i][0] for i in proposer.hidden_layers])


@pytest.mark.parametrize("method", list(HEADS))
@torch.inference_mode()
def test_the_lean_step_gives_the_modules_logits_at_every_kind_of_pass(bundled, method):
    hf, lean = both(bundled, method)
    ids = bundled.tokenizer.encode(CODE[0])
    feats = features(bundled, hf, ids)
    runs = [p.start(ids, feats) for p in (hf, lean)]  # each reads the prompt's rows in one multi-row pass
    assert runs[0].cache_length == runs[1].cache_length == len(ids) - 1 > 8
    assert close(hf.logits(runs[0].last), lean.logits(runs[1].last))  # the first draft step's logits

    states = [r.last for r in runs]
    for token in ids[1:5]:  # later draft steps, each reading its own output back over a cache of many rows
        states = [p.step(torch.tensor(token), s, r.cache) for p, s, r in zip((hf, lean), states, runs)]
        assert close(hf.logits(states[0]), lean.logits(states[1]))
    assert runs[0].cache_length == runs[1].cache_length

    rows = torch.tensor(ids[5:9])  # a multi-row pass after the cache: 4 pairs at once, causal among themselves
    outs = [p.head_pass(rows, feats[-1, 3:7], r.cache) for p, r in zip((hf, lean), runs)]  # (4, H) (or two)
    assert close(hf.logits(outs[0]), lean.logits(outs[1]))  # (4, V) every row's

    cached = runs[0].cache_length  # a tree depth: 3 nodes at one position, each seeing the cache and itself only
    allowed = torch.cat([torch.ones(3, cached, dtype=torch.bool), torch.eye(3, dtype=torch.bool)], dim=1)
    mask, positions = proposers.additive_mask(allowed, torch.float32), torch.full((1, 3), cached)
    parents = [proposers.take_rows(out, torch.tensor([3, 3, 3])) for out in outs]  # (3, H) each: the last row's
    trees = [p.step_nodes(rows[:3], s, r.cache, positions, mask) for p, s, r in zip((hf, lean), parents, runs)]
    assert close(hf.logits(trees[0]), lean.logits(trees[1]))


@pytest.mark.slow
@pytest.mark.parametrize("method", list(HEADS))
def test_greedy_runs_on_the_lean_step_equal_plain_and_the_hf_forward_token_for_token(bundled, method):
    for prompt in HELD_OUT:
        plain = generate(bundled, prompt, RunSettings(method=methods.PLAIN, max_new_tokens=32, forward=FORWARD_LEAN))
        runs = {
            kind: generate(bundled, prompt, RunSettings(method=method, k=4, max_new_tokens=32, forward=kind))
            for kind in (FORWARD_LEAN, FORWARD_HF)
        }
        assert runs[FORWARD_LEAN].output_ids == plain.output_ids == runs[FORWARD_HF].output_ids
        assert runs[FORWARD_LEAN].totals.accepted > 0  # trained heads: the lean step drafts tokens that pass


def test_the_lean_weights_are_built_once_per_head_and_leave_it_unchanged(bundled):
    head = bundled.load_head_for(methods.EAGLE3)
    before = {name: (t.data_ptr(), t.clone()) for name, t in head.state_dict().items()}
    built = lean_heads._build(head, bundled.target)
    after = head.state_dict()
    assert all(after[n].data_ptr() == ptr and torch.equal(after[n], t) for n, (ptr, t) in before.items())
    assert lean_heads.lean_head(head, bundled.target) is lean_heads.lean_head(head, bundled.target)  # shared
    assert built.weights.layers[0].qkv.weight.shape == (2 * 256, 3 * 256)  # q, k and v read [norm(emb); norm(h)]
    assert built.weights.head.weight.shape == (256, head.draft_vocab_size)  # its own LM head, input-major


def test_the_hf_forward_keeps_the_modules(bundled, monkeypatch):
    monkeypatch.setenv("SPECVIZ_FORWARD", "hf")  # auto then means Hugging Face's forward in this process
    for method, cls in HEADS.items():
        made = cls.for_run(proposers.RunContext(bundled, RunSettings(method=method, forward=FORWARD_AUTO)))
        assert made.runner.forward == FORWARD_HF


@pytest.mark.parametrize("method", ["eagle", "eagle3", "mtp", "medusa"])
def test_a_head_runs_trace_names_the_forward_its_head_ran(bundled, method):
    """EAGLE-1, EAGLE-3 and MTP draft on the lean forward with the target; Medusa's heads always run their modules."""
    from specviz.engine.decode import forwards_run

    lean = forwards_run(bundled, RunSettings(method=method, forward=FORWARD_LEAN))
    assert lean == {"target": FORWARD_LEAN, "head": FORWARD_HF if method == "medusa" else FORWARD_LEAN}
    assert forwards_run(bundled, RunSettings(method=method, forward=FORWARD_HF)) == {
        "target": FORWARD_HF,
        "head": FORWARD_HF,
    }
