"""Tree speculation on real forward passes: tree greedy == plain greedy token for token (float32, both test
architectures and the bundled pair, several shapes), (1,1,1,1) == the chain with K = 4 round for round, cache lengths
after every round, stops, determinism, the trace round-trip and the record's counts."""

from __future__ import annotations

import dataclasses
import json

import pytest

from specviz.core.record import RunRecord
from specviz.core.sampling import SamplingSettings
from specviz.core.settings import RunSettings
from specviz.core.trace import ACCEPTED, REJECTED, UNREACHED
from specviz.core.trace_json import trace_from_dict, trace_from_json, trace_to_json
from specviz.core.verify import tree_size
from specviz.engine.decode import generate
from specviz.errors import SettingsError
from specviz.viz.trace_frames import nodes_frame

PROMPTS = ["def add(a, b):\n    return", "The quick brown fox"]
MAX_NEW = 32
SHAPES = [(1, 1, 1, 1), (3, 2, 1, 1), (2, 2, 2), (4,)]


def tree(shape, **kw) -> RunSettings:
    return RunSettings(method="tree", tree=shape, max_new_tokens=kw.pop("max_new_tokens", MAX_NEW), **kw)


@pytest.fixture(scope="module")
def plain(load):
    cache = {}

    def _plain(arch, prompt):
        if (arch, prompt) not in cache:
            settings = RunSettings(method="plain", max_new_tokens=MAX_NEW)
            cache[arch, prompt] = generate(load(f"{arch}-target"), prompt, settings)
        return cache[arch, prompt]

    return _plain


@pytest.mark.parametrize("arch", ["llama", "gpt2"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: ",".join(map(str, s)))
def test_tree_greedy_equals_plain_greedy(load, plain, arch, shape):
    pair = load(f"{arch}-target", f"{arch}-truncated")
    for prompt in PROMPTS:
        assert generate(pair, prompt, tree(shape)).output_ids == plain(arch, prompt).output_ids


@pytest.mark.parametrize("arch", ["llama", "gpt2"])
@pytest.mark.parametrize("draft", ["target", "random"])
def test_tree_greedy_with_an_always_right_and_an_always_wrong_draft(load, plain, arch, draft):
    pair = load(f"{arch}-target", f"{arch}-{draft}")
    trace = generate(pair, PROMPTS[0], tree((2, 2, 1)))
    assert trace.output_ids == plain(arch, PROMPTS[0]).output_ids
    if draft == "target":  # the first child is the target's own argmax: every round walks the full depth
        assert all(len(r.path) == 3 for r in trace.rounds[:-1])


@pytest.mark.parametrize("arch", ["llama", "gpt2"])
def test_the_chain_shaped_tree_is_the_chain(load, arch):
    pair = load(f"{arch}-target", f"{arch}-truncated")
    chain = generate(pair, PROMPTS[0], RunSettings(method="draft", k=4, max_new_tokens=MAX_NEW))
    as_tree = generate(pair, PROMPTS[0], tree((1, 1, 1, 1)))
    assert [r.committed for r in as_tree.rounds] == [r.committed for r in chain.rounds]
    assert [r.accepted for r in as_tree.rounds] == [r.accepted for r in chain.rounds]
    assert as_tree.totals.tau == chain.totals.tau


@pytest.mark.slow
def test_bundled_pair_tree_greedy_equals_plain_greedy():
    from specviz.engine.loading.models import BUNDLED_DRAFT, BUNDLED_TARGET, load_pair

    pair = load_pair(BUNDLED_TARGET, BUNDLED_DRAFT, device="cpu", dtype="float32")
    prompt = PROMPTS[0]
    expected = generate(pair, prompt, RunSettings(method="plain", max_new_tokens=MAX_NEW)).output_ids
    for shape in [(1, 1, 1, 1), (3, 2, 1, 1), (2, 2, 2)]:
        assert generate(pair, prompt, tree(shape)).output_ids == expected, shape


@pytest.mark.parametrize("temperature", [0.0, 1.0])
@pytest.mark.parametrize("shape", [(3, 2, 1), (2, 2, 2, 2)], ids=lambda s: ",".join(map(str, s)))
def test_caches_keep_only_the_committed_sequence_after_every_round(load, temperature, shape):
    pair = load("llama-target", "llama-truncated")
    settings = tree(shape, sampling=SamplingSettings(temperature), stop_at_eos=False, max_new_tokens=40)
    trace = generate(pair, PROMPTS[1], settings)
    before = len(trace.prompt_ids)  # committed length at the start of the round
    for r in trace.rounds[:-1]:
        depth = max(n.depth for n in r.nodes)  # the full shape, or cut near max_new_tokens
        nodes, inner = len(r.nodes), sum(n.depth < depth for n in r.nodes)
        assert r.target_cache == (before + nodes, before)  # read: pending + every node; kept: the committed prefix
        assert r.draft_cache == (before + inner, before)  # the leaves are never read by the draft
        before += len(r.committed)
    assert len(trace.output_ids) == 40


def test_tree_nodes_and_path_are_consistent(load):
    pair = load("gpt2-target", "gpt2-truncated")
    trace = generate(pair, PROMPTS[0], tree((3, 2, 1), sampling=SamplingSettings(1.0), max_new_tokens=40, seed=3))
    for r in trace.rounds:
        parent = -1
        for depth, node in enumerate(r.path):  # a chain of parent links from the root
            assert r.nodes[node].parent == parent
            assert r.nodes[node].depth == depth + 1
            parent = node
        rejected = [n.id for n in r.nodes if n.verdict == REJECTED]
        shown = list(r.path) + ([max(rejected)] if r.residual_top else [])  # the path, then the last child rejected
        assert [pos.token_id for pos in r.positions] == [r.nodes[i].token_id for i in shown]
        if r.extra and r.extra.kind == "correction":  # a chain reader finds the rejection that led to it
            assert r.positions[-1].verdict == REJECTED
            assert r.positions[-1].index == len(r.path)
        assert r.committed[: r.accepted] == tuple(r.nodes[i].token_id for i in r.path[: r.accepted])
        tried = [n for n in r.nodes if n.verdict in (ACCEPTED, REJECTED)]
        assert all(n.ratio == pytest.approx(min(1.0, n.p / n.q)) for n in tried)
        assert all(n.verdict == UNREACHED for n in r.nodes if n.id not in r.path and n not in tried)
        assert all(0 < n.q <= 1 for n in r.nodes)
        assert r.proposed == len(r.nodes) <= tree_size((3, 2, 1))  # the whole tree (cut near max_new_tokens)
        assert all(n.p is None and n.ratio is None for n in r.nodes if n.verdict == UNREACHED)
    record = RunRecord.of_trace(trace)
    assert record.per_round_drafted == tuple(len(r.nodes) for r in trace.rounds)
    assert record.per_round_accepted == tuple(r.accepted for r in trace.rounds)
    assert record.per_round_judged == tuple(
        sum(n.verdict in (ACCEPTED, REJECTED) for n in r.nodes) for r in trace.rounds
    )


def test_tree_trace_round_trips_through_json_and_chain_traces_stay_version_1(load):
    pair = load("llama-target", "llama-truncated")
    trace = generate(pair, PROMPTS[0], tree((2, 2), sampling=SamplingSettings(0.8, top_k=20), max_new_tokens=12))
    doc = json.loads(trace_to_json(trace))
    assert doc["version"] == 2
    assert doc["settings"]["tree"] == [2, 2]
    assert doc["rounds"][0]["nodes"]
    assert trace_from_json(trace_to_json(trace)) == trace
    frame = nodes_frame(trace)
    assert len(frame) == sum(len(r.nodes) for r in trace.rounds)
    assert frame["on_path"].sum() == sum(len(r.path) for r in trace.rounds)
    chain = json.loads(trace_to_json(generate(pair, PROMPTS[0], RunSettings(k=2, max_new_tokens=6))))
    assert chain["version"] == 1
    assert "tree" not in chain["settings"]
    assert "nodes" not in chain["rounds"][0]
    assert trace_from_dict(chain).settings.tree == ()


@pytest.mark.parametrize("max_new_tokens", [1, 2, 7])
def test_max_new_tokens_is_never_exceeded(load, max_new_tokens):
    pair = load("gpt2-target", "gpt2-target")
    trace = generate(pair, PROMPTS[0], tree((2, 1, 1), max_new_tokens=max_new_tokens, stop_at_eos=False))
    assert len(trace.output_ids) == max_new_tokens
    assert trace.rounds[-1].stop == "max_new_tokens"


def test_eos_accepted_mid_path_ends_the_output_there(load):
    pair = load("llama-target", "llama-target")  # self-draft: the first child is always right
    free = generate(pair, PROMPTS[0], tree((2, 1, 1, 1), stop_at_eos=False))
    eos = free.rounds[0].committed[1]
    stopped = generate(dataclasses.replace(pair, eos_ids=frozenset({eos})), PROMPTS[0], tree((2, 1, 1, 1)))
    assert stopped.output_ids == free.rounds[0].committed[:2]
    last = stopped.rounds[-1]
    assert last.stop == "eos"
    assert last.extra is None
    assert last.accepted == 2
    assert [last.nodes[i].verdict for i in last.path] == ["accepted", "accepted", "after_stop", "after_stop"]


def test_same_seed_same_tree_trace(load):
    pair = load("gpt2-target", "gpt2-truncated")
    settings = tree((3, 2), sampling=SamplingSettings(1.0), seed=11, max_new_tokens=20)
    first, second = generate(pair, PROMPTS[1], settings), generate(pair, PROMPTS[1], settings)
    assert first.without_timings() == second.without_timings()


def test_a_tree_too_big_for_the_context_is_refused(load):
    pair = load("llama-target", "llama-truncated")  # context 256
    settings = tree((4, 4, 4), max_new_tokens=170)  # 84 nodes + 170 + the prompt > 256
    with pytest.raises(SettingsError, match="tree of 84 nodes"):
        generate(pair, PROMPTS[0], settings)


def test_tree_needs_a_draft_model(load):
    with pytest.raises(SettingsError, match="draft model"):
        generate(load("llama-target"), PROMPTS[0], tree((2, 1)))


def test_one_draft_pass_per_depth_and_one_target_pass_per_round(load):
    pair = load("gpt2-target", "gpt2-truncated")
    calls = {"draft": 0, "target": 0}
    hooks = [
        model.register_forward_hook(lambda *_, name=name: calls.__setitem__(name, calls[name] + 1))
        for name, model in (("draft", pair.draft), ("target", pair.target))
    ]
    try:
        trace = generate(pair, PROMPTS[0], tree((3, 2, 2), max_new_tokens=9, stop_at_eos=False))
    finally:
        for hook in hooks:
            hook.remove()
    prefill = 1  # each model reads the prompt once before the first round
    assert calls["target"] == prefill + len(trace.rounds)
    depths = [max((n.depth for n in r.nodes), default=0) for r in trace.rounds]
    assert calls["draft"] == prefill + sum(depths)  # 3 x 2 x 2 = 12 leaves, still 3 passes a round
