"""The EAGLE-3 proposer: a degenerate head drafts exactly what is worked out by hand, only draft-vocabulary tokens are
drafted, greedy output equals plain decoding token for token, the head's cache is rolled back every round, a head
directory is told apart from an EAGLE-1 one by its config, and missing or misfit heads are refused with a message."""

from __future__ import annotations

import json
import shutil

import pytest
import torch
from eagle3_heads import echo_draft, every_third, save_degenerate3

from specviz import methods
from specviz.core.sampling import SamplingSettings
from specviz.core.settings import RunSettings
from specviz.engine.decode import generate
from specviz.engine.heads.eagle3 import new_head3, save_head3
from specviz.engine.loading.models import load_pair
from specviz.engine.proposers import RunContext
from specviz.engine.proposers.eagle3 import Eagle3Proposer
from specviz.errors import ModelLoadError, SettingsError, SpecvizError

PROMPTS = ["def add(a, b):\n    return", "class Counter:\n    def increment(self, step=1):\n", "The quick brown fox"]
REPEATING = "for item in items:\n    print(item)\nfor item in items:\n"
EAGLE3 = methods.EAGLE3


@pytest.fixture(scope="module")
def heads(model_dirs, tmp_path_factory):
    """pair(kind) -> the tiny llama target with an EAGLE-3 head: "echo" (degenerate), "random" or "full" (a random
    head whose draft vocabulary is every token)."""
    root = tmp_path_factory.mktemp("heads3")
    target_dir = str(model_dirs["llama-target"])
    bare = load_pair(target_dir, None, device="cpu")
    kept = every_third(bare)
    dirs = {
        "echo": save_degenerate3(bare.target, kept, root / "echo"),
        "random": save_head3(new_head3(bare.target, kept, seed=9), root / "random", dtype=torch.float32),
        "full": save_head3(
            new_head3(bare.target, torch.arange(bare.vocab_size), seed=8), root / "full", dtype=torch.float32
        ),
    }
    pairs = {kind: load_pair(target_dir, None, device="cpu", head=str(d)) for kind, d in dirs.items()}
    return pairs.__getitem__


def greedy(k: int, max_new: int = 30) -> RunSettings:
    return RunSettings(method=EAGLE3, k=k, max_new_tokens=max_new, stop_at_eos=False)


def test_the_degenerate_head_drafts_the_token_worked_out_by_hand_then_repeats_it(heads):
    """s = h = the target's state at the first layer read, row n - 1: every draft of a round is the kept token of
    largest lm_head(norm(that state)), computed here from the target alone."""
    pair = heads("echo")
    head = pair.load_head_for(EAGLE3)
    trace = generate(pair, PROMPTS[1], greedy(k=3))
    committed = list(trace.prompt_ids)
    drafted_any = 0
    for r in trace.rounds:
        drafted = [p.token_id for p in r.positions]
        if drafted:
            assert drafted == [echo_draft(pair, head, committed)] * len(drafted)
            assert all(p.q == 1.0 for p in r.positions)  # greedy: one-hot q
            drafted_any += len(drafted)
        committed += list(r.committed)
    assert drafted_any > 0


@pytest.mark.parametrize("kind", ["echo", "random", "full"])
@pytest.mark.parametrize("k", [1, 4])
def test_greedy_eagle3_equals_plain_token_for_token(heads, kind, k):
    pair = heads(kind)
    kept = set(pair.load_head_for(EAGLE3).target_ids.tolist())
    for prompt in PROMPTS + [REPEATING]:
        plain = generate(pair, prompt, RunSettings(method=methods.PLAIN, max_new_tokens=30, stop_at_eos=False))
        eagle = generate(pair, prompt, greedy(k))
        assert eagle.output_ids == plain.output_ids
        assert eagle.totals.rounds <= plain.totals.rounds
        assert {p.token_id for r in eagle.rounds for p in r.positions} <= kept  # drafts only from the draft vocabulary


def test_the_heads_cache_holds_one_pair_per_committed_row_after_every_round(heads):
    pair = heads("random")
    trace = generate(pair, REPEATING, greedy(k=4, max_new=40))
    rows = len(trace.prompt_ids) - 1  # the target's feature rows: the prefill reads all but the last prompt token
    for r in trace.rounds[:-1]:
        before, after = r.draft_cache
        assert before == rows + max(len(r.positions) - 1, 0)  # one pair per row + the drafted pairs
        assert after == r.target_cache[1]  # rolled back, then the new rows read with real features
        rows = r.target_cache[1]


def test_sampled_eagle3_is_seeded_and_its_q_is_zero_off_the_draft_vocabulary(heads):
    pair = heads("random")
    settings = RunSettings(method=EAGLE3, k=3, max_new_tokens=20, sampling=SamplingSettings(temperature=1.0))
    a, b = generate(pair, PROMPTS[2], settings), generate(pair, PROMPTS[2], settings)
    assert a.output_ids == b.output_ids
    assert all(0 < p.q < 1 for r in a.rounds for p in r.positions)  # q = the head's distribution, not one-hot
    drafter = Eagle3Proposer.for_run(RunContext(pair, settings))
    ids = pair.tokenizer.encode(PROMPTS[2])
    with torch.no_grad():
        states = pair.target(input_ids=torch.tensor([ids[:-1]]), output_hidden_states=True).hidden_states
        features = torch.stack([states[i][0] for i in drafter.hidden_layers])  # (layers, rows, H)
        run = drafter.start(ids, features)
        proposal = run.propose(2, torch.full((2,), 0.5))
    off = torch.ones(pair.vocab_size, dtype=torch.bool)
    off[pair.load_head_for(EAGLE3).target_ids] = False
    assert proposal.q.shape == (2, pair.vocab_size) and float(proposal.q[:, off].sum()) == 0.0
    torch.testing.assert_close(proposal.q.sum(-1), torch.ones(2))


def test_a_head_directory_is_told_apart_by_its_config(heads, model_dirs, tmp_path):
    eagle3 = heads("random")
    beside = model_dirs["llama-target"].parent
    assert eagle3.head(EAGLE3) not in (None, str(beside / "eagle3"))  # --head DIR: an EAGLE-3 head, for EAGLE-3
    others = {name: eagle3.head(name) for name in (methods.EAGLE, methods.MEDUSA)}
    assert others == {methods.EAGLE: str(beside / "eagle"), methods.MEDUSA: str(beside / "medusa")}  # beside it
    shutil.copytree(model_dirs["llama-target"], tmp_path / "target")
    bare = load_pair(str(tmp_path / "target"), None, device="cpu")
    assert bare.head(EAGLE3) is None and bare.head(methods.EAGLE) is None
    with pytest.raises(SettingsError, match="EAGLE-1 method needs a head"):
        generate(bare, PROMPTS[0], RunSettings(method=methods.EAGLE, k=2, max_new_tokens=4))
    save_degenerate3(bare.target, every_third(bare), tmp_path / "eagle3")
    found = load_pair(str(tmp_path / "target"), None, device="cpu")
    assert (
        found.head(EAGLE3) == str(tmp_path / "eagle3") and found.head(methods.EAGLE) is None
    )  # beside the target: eagle3/
    assert generate(found, PROMPTS[0], greedy(k=2, max_new=6)).totals.proposed > 0


def test_no_head_and_wrong_heads_are_refused_with_a_message(model_dirs, load, tmp_path):
    shutil.copytree(model_dirs["llama-target"], tmp_path / "alone" / "target")
    bare = load_pair(str(tmp_path / "alone" / "target"), None, device="cpu")
    with pytest.raises(SettingsError, match="EAGLE-3 method needs an EAGLE-3 head.*train-tiny eagle3"):
        generate(bare, PROMPTS[0], greedy(k=2))
    other = load("other-vocab").target
    save_head3(new_head3(other, torch.arange(0, other.config.vocab_size, 2)), tmp_path / "other")
    mismatched = load_pair(str(model_dirs["llama-target"]), None, device="cpu", head=str(tmp_path / "other"))
    with pytest.raises(SpecvizError, match="EAGLE-3 head .* built for width 64 and a vocabulary of"):
        generate(mismatched, PROMPTS[0], greedy(k=2))
    assert RunSettings(method=EAGLE3, tree=(2, 1)).is_tree  # trees of its top tokens: tests/engine/test_head_trees.py
    with pytest.raises(ModelLoadError, match="is not a feature head directory"):
        load_pair(str(model_dirs["llama-target"]), None, device="cpu", head=str(model_dirs["llama-truncated"]))


def test_cli_runs_eagle3_with_a_given_head_and_bench_times_its_step(heads, model_dirs, capsys, tmp_path):
    from specviz.cli import main
    from specviz.measure.bench import run_bench

    pair = heads("random")
    target = str(pair.target_name)
    base = ["run", "--prompt", "def add", "--target", target, "--method", EAGLE3, "--k", "3", "--device", "cpu"]
    assert main([*base, "--max-new-tokens", "8", "--head", pair.head(EAGLE3), "--json"]) == 0
    trace = json.loads(capsys.readouterr().out)
    assert trace["settings"]["method"] == EAGLE3 and trace["meta"]["head"] == pair.head(EAGLE3)
    assert main([*base, "--max-new-tokens", "4", "--json"]) == 0
    beside = str(model_dirs["llama-target"].parent / "eagle3")  # the random head beside the tiny targets (conftest)
    assert json.loads(capsys.readouterr().out)["meta"]["head"] == beside

    prompts = tmp_path / "prompts.txt"
    prompts.write_text("def add(a, b):\n")
    measure = ["measure", str(prompts), "--target", target, "--method", f"{methods.EAGLE},{EAGLE3}", "--k", "2"]
    assert main([*measure, "--max-new-tokens", "6", "--device", "cpu"]) == 0  # both heads beside the tiny target
    assert EAGLE3 in capsys.readouterr().out

    doc = run_bench(pair, [PROMPTS[0]], [2], RunSettings(max_new_tokens=6), lanes=(methods.PLAIN, EAGLE3))
    costs = doc["costs"]
    assert doc["environment"]["heads"] == {EAGLE3: pair.head(EAGLE3)} and set(costs["step_ms"]) == {EAGLE3}
    assert costs["step_ms"][EAGLE3] > 0
    row = next(r for r in doc["results"] if r["method"] == EAGLE3)
    assert row["identical_to_plain"]
    if costs["implausible"] is None:
        assert row["c"] == pytest.approx(costs["c_of"][EAGLE3])


def test_the_registry_lists_eagle3_everywhere_a_proposer_goes():
    method = methods.get(EAGLE3)
    assert EAGLE3 in methods.PROPOSERS and EAGLE3 in methods.LANES and methods.FROM_VLLM["eagle3"] == EAGLE3
    assert method.vllm_config(4, "/heads/eagle3") == {
        "method": "eagle3",
        "num_speculative_tokens": 4,
        "model": "/heads/eagle3",
    }
