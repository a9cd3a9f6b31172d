"""The Medusa proposer: drafts from the target's feature exactly as worked out by hand for degenerate heads, greedy
output equal to plain decoding token for token, K above the number of heads drafting one token per head, and the
CLI, the registry and the bench naming and timing it."""

from __future__ import annotations

import json

import pytest
import torch
from medusa_heads import save_degenerate_medusa, shifted_drafts

from specviz import methods
from specviz.core.sampling import SamplingSettings
from specviz.core.settings import RunSettings
from specviz.engine.decode import generate
from specviz.engine.heads.medusa import new_medusa, save_medusa
from specviz.engine.loading.models import find_heads, load_pair
from specviz.engine.proposers import draft_cap_note
from specviz.errors import ModelLoadError, SettingsError, SpecvizError

PROMPTS = ["def add(a, b):\n    return", "class Counter:\n    def increment(self, step=1):\n", "The quick brown fox"]
REPEATING = "for item in items:\n    print(item)\nfor item in items:\n"
MEDUSA = methods.MEDUSA


@pytest.fixture(scope="module")
def heads(model_dirs, tmp_path_factory):
    """pair(kind) -> the tiny llama target with Medusa heads: "echo" / "shifted" (tests/medusa_heads.py), or the
    random ones beside the tiny targets (tests/conftest.py)."""
    root = tmp_path_factory.mktemp("medusa")
    target_dir = str(model_dirs["llama-target"])
    bare = load_pair(target_dir, None, device="cpu")
    dirs = {k: save_degenerate_medusa(bare.target, k, root / k, vocab=bare.vocab_size) for k in ("echo", "shifted")}
    dirs["random"] = model_dirs["llama-target"].parent / "medusa"
    pairs = {kind: load_pair(target_dir, None, device="cpu", head=str(d)) for kind, d in dirs.items()}
    return pairs.__getitem__


def greedy(k: int, max_new: int = 30) -> RunSettings:
    return RunSettings(method=MEDUSA, k=k, max_new_tokens=max_new, stop_at_eos=False)


def argmax_before_last(pair, ids: list[int]) -> int:
    """The target's greedy choice at the row before the last token: what its feature there predicts."""
    with torch.no_grad():
        return int(pair.target(input_ids=torch.tensor([ids[:-1]])).logits[0, -1, : pair.vocab_size].argmax())


def test_the_shifted_heads_draft_what_head_i_guesses_from_the_row_that_produced_the_last_token(heads):
    """Head i drafts (a + 1 + i) mod V, a the target's argmax at the row before the last committed token: in a
    greedy run after the first round, a is that last token itself (the target produced it from that row)."""
    pair = heads("shifted")
    v = pair.vocab_size
    trace = generate(pair, PROMPTS[0], greedy(k=4))
    ids = list(trace.prompt_ids)
    a_first = argmax_before_last(pair, ids)
    assert [p.token_id for p in trace.rounds[0].positions] == shifted_drafts(a_first, 4, v)
    for before, r in zip(trace.rounds, trace.rounds[1:]):
        drafted = [p.token_id for p in r.positions]
        assert drafted == shifted_drafts(before.committed[-1], len(drafted), v)
        assert all(p.q == 1.0 for p in r.positions)  # greedy: one-hot q
    assert sum(len(r.positions) for r in trace.rounds) > 0


def test_the_echo_heads_draft_the_last_committed_token_k_times(heads):
    pair = heads("echo")
    trace = generate(pair, REPEATING, greedy(k=3))
    for before, r in zip(trace.rounds, trace.rounds[1:]):
        assert [p.token_id for p in r.positions] == [before.committed[-1]] * len(r.positions)


@pytest.mark.parametrize("kind", ["echo", "shifted", "random"])
@pytest.mark.parametrize("k", [1, 4])
def test_greedy_medusa_equals_plain_token_for_token(heads, kind, k):
    pair = heads(kind)
    for prompt in PROMPTS + [REPEATING]:
        plain = generate(pair, prompt, RunSettings(method=methods.PLAIN, max_new_tokens=30, stop_at_eos=False))
        medusa = generate(pair, prompt, greedy(k))
        assert medusa.output_ids == plain.output_ids
        assert medusa.totals.rounds <= plain.totals.rounds
        assert all(r.draft_cache == (0, 0) for r in medusa.rounds)  # the heads keep no cache


def test_k_above_the_number_of_heads_drafts_one_token_per_head_and_says_so(heads):
    pair = heads("random")
    trace = generate(pair, PROMPTS[1], greedy(k=7, max_new=20))
    assert max(len(r.positions) for r in trace.rounds) == 4
    note = draft_cap_note(pair, greedy(k=7))
    assert "Medusa heads are 4" in note and "K = 7 drafts 4 tokens" in note
    assert draft_cap_note(pair, greedy(k=4)) is None
    assert len(generate(pair, PROMPTS[1], greedy(k=2, max_new=10)).rounds[1].positions) == 2  # the first two heads


def test_sampled_medusa_draws_from_each_heads_q_and_is_seeded(heads):
    pair = heads("random")
    settings = RunSettings(method=MEDUSA, k=4, max_new_tokens=20, sampling=SamplingSettings(temperature=1.0))
    a, b = generate(pair, PROMPTS[2], settings), generate(pair, PROMPTS[2], settings)
    assert a.output_ids == b.output_ids
    assert all(0 < p.q < 1 for r in a.rounds for p in r.positions)  # q = the head's distribution, not one-hot


def test_a_one_token_prompt_drafts_after_the_first_target_pass(heads):
    pair = heads("random")
    prompt = pair.tokenizer.decode(pair.tokenizer.encode(PROMPTS[2])[:1])
    trace = generate(pair, prompt, greedy(k=3, max_new=8))
    assert trace.rounds[0].positions == ()
    assert len(trace.rounds[1].positions) == 3


def test_a_head_directory_is_told_apart_by_its_config(model_dirs, heads, tmp_path):
    target = str(model_dirs["llama-target"])
    beside = model_dirs["llama-target"].parent
    found = {
        methods.EAGLE: str(beside / "eagle"),
        methods.EAGLE3: str(beside / "eagle3"),
        methods.MTP: str(beside / "mtp"),
    }
    assert find_heads(target, None) == {**found, MEDUSA: str(beside / "medusa")}
    given = str(tmp_path / "given")
    save_medusa(new_medusa(heads("random").target), given)
    assert find_heads(target, given) == {**found, MEDUSA: given}  # the given one wins
    assert load_pair(target, None, device="cpu", head=given).head(MEDUSA) == given


def test_no_heads_and_wrong_heads_are_refused_with_a_message(model_dirs, load, tmp_path):
    import shutil

    shutil.copytree(model_dirs["llama-target"], tmp_path / "alone" / "target")
    bare = load_pair(str(tmp_path / "alone" / "target"), None, device="cpu")
    with pytest.raises(SettingsError, match="Medusa method needs heads trained for this target.*--head DIR"):
        generate(bare, PROMPTS[0], greedy(k=2))
    other = save_medusa(new_medusa(load("other-vocab").target), tmp_path / "other")
    mismatched = load_pair(str(model_dirs["llama-target"]), None, device="cpu", head=str(other))
    with pytest.raises(SpecvizError, match="Medusa head .* built for width 64 and a vocabulary of"):
        generate(mismatched, PROMPTS[0], greedy(k=2))
    with pytest.raises(ModelLoadError, match="is not a feature head directory"):
        load_pair(str(model_dirs["llama-target"]), None, device="cpu", head=str(model_dirs["llama-truncated"]))
    beside = load_pair(str(model_dirs["llama-target"]), None, device="cpu")  # four random heads beside it
    with pytest.raises(SettingsError, match="is 5 levels deep, but the Medusa heads are 4"):
        generate(beside, PROMPTS[0], RunSettings(method=MEDUSA, tree=(1, 1, 1, 1, 1)))


def test_the_registry_names_medusa_for_every_list_and_for_vllm():
    m = methods.get(MEDUSA)
    assert m.label == "Medusa heads" and m.loads_head and not m.loads_draft
    assert MEDUSA in methods.PROPOSERS and MEDUSA in methods.LANES and methods.FROM_VLLM["medusa"] == MEDUSA
    assert m.vllm_config(4, "DIR") == {"method": "medusa", "num_speculative_tokens": 4, "model": "DIR"}


def test_cli_runs_medusa_with_the_heads_beside_the_target_or_given(model_dirs, heads, capsys, tmp_path):
    from specviz.cli import main

    target = str(model_dirs["llama-target"])
    base = ["run", "--prompt", "def add", "--target", target, "--method", MEDUSA, "--device", "cpu"]
    assert main([*base, "--k", "4", "--max-new-tokens", "8", "--json"]) == 0
    trace = json.loads(capsys.readouterr().out)
    assert trace["settings"]["method"] == MEDUSA and len(trace["rounds"]) >= 1
    assert trace["meta"]["head"] == str(model_dirs["llama-target"].parent / "medusa")

    given = save_medusa(new_medusa(heads("random").target), tmp_path / "given")
    assert main([*base, "--k", "6", "--max-new-tokens", "8", "--head", str(given)]) == 0
    out = capsys.readouterr()
    assert f"{MEDUSA}, K=6, greedy: 8 tokens" in out.out and "K = 6 drafts 4 tokens a round" in out.err


def test_bench_times_a_medusa_pass_and_predicts_medusa_with_it(load):
    from specviz.measure.bench import run_bench

    pair = load("llama-target")  # the random heads beside the tiny targets (tests/conftest.py)
    doc = run_bench(pair, [PROMPTS[0]], [2], RunSettings(max_new_tokens=6), lanes=(methods.PLAIN, MEDUSA))
    costs = doc["costs"]
    assert doc["environment"]["heads"] == {MEDUSA: pair.head(MEDUSA)}
    assert costs["pass_drafts"] == {MEDUSA: 4} and costs["step_ms"][MEDUSA] > 0  # a pass's share per draft
    assert costs["c_of"][MEDUSA] == pytest.approx(costs["step_ms"][MEDUSA] / costs["target_step_ms"])
    row = next(r for r in doc["results"] if r["method"] == MEDUSA)
    assert row["identical_to_plain"]
    if costs["implausible"] is None:  # a busy machine's timings build no prediction
        assert row["c"] == pytest.approx(costs["c_of"][MEDUSA])
