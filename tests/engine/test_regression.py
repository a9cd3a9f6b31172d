"""Behaviour pinned across refactors: traces recorded from main before the measurement-layer change (commit 4994c97;
the tree traces before the one decoding loop, b8947b7) must come out the same: same text, same drafts, same
uniforms, same accept / reject decisions, same probabilities (to float tolerance: kernels may round differently on
another CPU). The EAGLE-3 and Medusa traces were recorded when their branches were merged, with the EAGLE-1
traces' prompt and settings; so were the early-exit ones (E = 4 greedy, E = 6 sampled) and the MTP ones. The EAGLE-3
traces were recorded again when the head was retrained (be6c90e): a new head drafts other tokens, by design. The
n-gram trace was recorded again when lookup took the earliest occurrence of the match (vLLM's rule, 2026-12-04), and
the TLI and SLEM traces (SmolLM2-135M-Instruct drafted by the bundled draft, whose tokenizers differ) when they were
merged, and the quantized ones (the target's own 4-bit copy greedy, its 3-bit copy sampled) when the method came,
on an AVX2 EPYC: the copy's q is what this CPU's bfloat16 kernels compute, so it is held to 5%, and its decisions,
which u against a ratio that close decides, the same. They replay with the head they were recorded with (float32:
a CPU with AVX-512 BF16 would run it in bfloat16 and draft other tokens at near-ties)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specviz import methods
from specviz.core.trace_json import trace_from_json
from specviz.engine.decode import generate
from specviz.engine.forward import quantized
from specviz.methods import ENGINE_METHODS

FIXTURES = sorted((Path(__file__).parents[1] / "fixtures" / "regression").glob("*.json"))


def replayed(path: Path):
    """A recorded trace as a test case: those on the real target (drafted across tokenizers) are slow, the 135M model
    loading and decoding."""
    crosses = methods.get(json.loads(path.read_text())["settings"]["method"]).crosses
    return pytest.param(path, id=path.stem, marks=[pytest.mark.slow] if crosses else [])


@pytest.fixture(scope="module")
def bundled():
    from specviz.engine.loading.models import BUNDLED_DRAFT, BUNDLED_TARGET, load_pair

    return load_pair(BUNDLED_TARGET, BUNDLED_DRAFT, device="cpu")


@pytest.fixture(scope="module")
def across_tokenizers():
    """The real target drafted by the bundled draft, whose tokenizer is another: the pair of TLI and SLEM."""
    from specviz.engine.loading.catalogue import find_pair
    from specviz.engine.loading.models import BUNDLED_DRAFT, load_pair

    target, _ = find_pair("smollm2").sources()
    return load_pair(target, BUNDLED_DRAFT, device="cpu", cross_vocab=True)


@pytest.mark.parametrize("path", [replayed(p) for p in FIXTURES])
def test_same_settings_and_seed_give_the_recorded_trace(request, monkeypatch, path):
    recorded = trace_from_json(path.read_text())
    if "(float32)" in recorded.meta.get("draft_copy", ""):  # the quantized copy's head as recorded, on any CPU
        monkeypatch.setattr(quantized, "bfloat16_native", lambda device: False)
    crosses = methods.get(recorded.settings.method).crosses
    pair = request.getfixturevalue("across_tokenizers" if crosses else "bundled")
    now = generate(pair, recorded.prompt, recorded.settings).without_timings()
    assert now.text == recorded.text
    assert now.output_ids == recorded.output_ids
    assert len(now.rounds) == len(recorded.rounds)
    for new, old in zip(now.rounds, recorded.rounds):
        assert new.committed == old.committed
        assert new.stop == old.stop
        assert (new.target_cache, new.draft_cache) == (old.target_cache, old.draft_cache)
        assert [(p.token_id, p.verdict, p.u) for p in new.positions] == [
            (p.token_id, p.verdict, p.u) for p in old.positions
        ]
        q_rel = 0.05 if methods.get(recorded.settings.method).quantizes else 1e-4  # the copy's q is its kernels'
        for a, b in zip(new.positions, old.positions):
            assert a.p == pytest.approx(b.p, rel=1e-4, abs=1e-6)
            assert (a.q, a.ratio) == pytest.approx((b.q, b.ratio), rel=q_rel, abs=1e-6)
        assert new.path == old.path
        assert [(n.id, n.parent, n.token_id, n.verdict, n.u) for n in new.nodes] == [
            (n.id, n.parent, n.token_id, n.verdict, n.u) for n in old.nodes
        ]
        for a, b in zip(new.nodes, old.nodes):
            assert (a.q, a.p, a.ratio) == pytest.approx((b.q, b.p, b.ratio), rel=1e-4, abs=1e-6)
        assert [(c.parent, c.token_id, c.expanded, c.node) for c in new.scored] == [
            (c.parent, c.token_id, c.expanded, c.node) for c in old.scored
        ]  # a dynamic tree's candidates (the dynamic fixtures were recorded when dynamic trees were merged)
        for a, b in zip(new.scored, old.scored):
            assert (a.q, a.score) == pytest.approx((b.q, b.score), rel=1e-4, abs=1e-5)
        assert (new.extra is None) == (old.extra is None)
        if new.extra:
            assert (new.extra.token_id, new.extra.kind, new.extra.u) == (
                old.extra.token_id,
                old.extra.kind,
                old.extra.u,
            )


def test_the_fixtures_cover_every_method():
    recorded = {trace_from_json(p.read_text()).settings.method for p in FIXTURES}
    assert recorded == set(ENGINE_METHODS)
