"""The EAGLE-1 proposer: drafts from the target's features exactly as worked out by hand for degenerate heads, greedy
output equal to plain decoding token for token, the head's cache rolled back every round, and clear refusals."""

from __future__ import annotations

import json

import pytest
import torch
from eagle_heads import embedding_chain, save_degenerate

from specviz import methods
from specviz.core.sampling import SamplingSettings
from specviz.core.settings import RunSettings
from specviz.engine.decode import generate
from specviz.engine.heads.eagle import new_eagle_head, save_eagle_head
from specviz.engine.loading.models import load_pair
from specviz.errors import ModelLoadError, SettingsError, SpecvizError

PROMPTS = ["def add(a, b):\n    return", "class Counter:\n    def increment(self, step=1):\n", "The quick brown fox"]
REPEATING = "for item in items:\n    print(item)\nfor item in items:\n"  # the feature echo gets whole rounds right
EAGLE = methods.EAGLE


@pytest.fixture(scope="module")
def heads(model_dirs, tmp_path_factory):
    """pair(kind) -> the tiny llama target with an EAGLE-1 head: "embedding" / "feature" echo, or "random"."""
    root = tmp_path_factory.mktemp("heads")
    target_dir = str(model_dirs["llama-target"])
    bare = load_pair(target_dir, None, device="cpu")
    dirs = {echo: save_degenerate(bare.target, echo, root / echo) for echo in ("embedding", "feature")}
    dirs["random"] = save_eagle_head(new_eagle_head(bare.target, seed=9), root / "random", dtype=torch.float32)
    pairs = {kind: load_pair(target_dir, None, device="cpu", head=str(d)) for kind, d in dirs.items()}
    return pairs.__getitem__


def greedy(k: int, max_new: int = 30) -> RunSettings:
    return RunSettings(method=EAGLE, k=k, max_new_tokens=max_new, stop_at_eos=False)


def test_the_embedding_echo_head_drafts_the_chain_worked_out_by_hand(heads):
    pair = heads("embedding")
    trace = generate(pair, PROMPTS[0], greedy(k=3))
    last = trace.prompt_ids[-1]
    for r in trace.rounds:
        drafted = [p.token_id for p in r.positions]
        assert drafted == embedding_chain(pair, last, len(drafted))  # from the last committed token, whatever f
        assert all(p.q == 1.0 for p in r.positions)  # greedy: one-hot q
        last = r.committed[-1]
    assert sum(len(r.positions) for r in trace.rounds) > 0


def test_the_feature_echo_head_reads_the_real_feature_of_the_last_committed_row(heads):
    """g = f_t: the first draft is the target's greedy choice at the row before the last committed token, which after
    the first round is that token itself; every later draft repeats it (the head reads its own g back)."""
    pair = heads("feature")
    trace = generate(pair, PROMPTS[1], greedy(k=3))
    ids = torch.tensor([trace.prompt_ids])
    with torch.no_grad():
        first = int(pair.target(input_ids=ids[:, :-1]).logits[0, -1, : pair.vocab_size].argmax())
    assert [p.token_id for p in trace.rounds[0].positions] == [first] * 3
    for before, r in zip(trace.rounds, trace.rounds[1:]):
        assert [p.token_id for p in r.positions] == [before.committed[-1]] * len(r.positions)


@pytest.mark.parametrize("kind", ["embedding", "feature", "random"])
@pytest.mark.parametrize("k", [1, 4])
def test_greedy_eagle_equals_plain_token_for_token(heads, kind, k):
    pair = heads(kind)
    for prompt in PROMPTS + [REPEATING]:
        plain = generate(pair, prompt, RunSettings(method=methods.PLAIN, max_new_tokens=30, stop_at_eos=False))
        eagle = generate(pair, prompt, greedy(k))
        assert eagle.output_ids == plain.output_ids
        assert eagle.totals.rounds <= plain.totals.rounds


def test_the_heads_cache_holds_one_pair_per_committed_row_after_every_round(heads):
    pair = heads("feature")  # on this prompt some rounds accept 3 or 4 drafts, most none
    trace = generate(pair, REPEATING, greedy(k=4, max_new=40))
    accepted = [sum(p.accepted for p in r.positions) for r in trace.rounds]
    assert max(accepted) >= 3 and min(accepted) == 0
    rows = len(trace.prompt_ids) - 1  # the target's feature rows: the prefill reads all but the last prompt token
    for r in trace.rounds[:-1]:
        before, after = r.draft_cache
        assert before == rows + max(len(r.positions) - 1, 0)  # one pair per row + the drafted pairs (g, d)
        assert after == r.target_cache[1]  # rolled back, then the new rows read with real features
        rows = r.target_cache[1]


def test_sampled_eagle_runs_and_is_seeded(heads):
    pair = heads("random")
    settings = RunSettings(method=EAGLE, k=3, max_new_tokens=20, sampling=SamplingSettings(temperature=1.0))
    a, b = generate(pair, PROMPTS[2], settings), generate(pair, PROMPTS[2], settings)
    assert a.output_ids == b.output_ids
    assert all(0 < p.q <= 1 for r in a.rounds for p in r.positions)  # q = the head's distribution, not one-hot


def test_a_one_token_prompt_drafts_after_the_first_target_pass(heads):
    pair = heads("random")
    prompt = pair.tokenizer.decode(pair.tokenizer.encode(PROMPTS[2])[:1])
    trace = generate(pair, prompt, greedy(k=3, max_new=8))
    assert trace.rounds[0].positions == ()
    assert len(trace.rounds[1].positions) == 3


def test_no_head_and_wrong_heads_are_refused_with_a_message(model_dirs, load, tmp_path):
    import shutil

    shutil.copytree(model_dirs["llama-target"], tmp_path / "alone" / "target")  # no eagle/ beside this one
    bare = load_pair(str(tmp_path / "alone" / "target"), None, device="cpu")
    with pytest.raises(SettingsError, match="needs a head trained for this target.*--head DIR"):
        generate(bare, PROMPTS[0], greedy(k=2))
    with pytest.raises(ModelLoadError, match="is not a feature head directory"):
        load_pair(str(model_dirs["llama-target"]), None, device="cpu", head=str(model_dirs["llama-truncated"]))
    other = save_eagle_head(new_eagle_head(load("other-vocab").target), tmp_path / "other")
    mismatched = load_pair(str(model_dirs["llama-target"]), None, device="cpu", head=str(other))
    with pytest.raises(SpecvizError, match="built for width 64 and a vocabulary of"):
        generate(mismatched, PROMPTS[0], greedy(k=2))
    assert RunSettings(method=EAGLE, tree=(2, 1)).is_tree  # trees of its top tokens: tests/engine/test_head_trees.py


def test_a_head_beside_the_target_is_found(model_dirs, tmp_path):
    import shutil

    shutil.copytree(model_dirs["llama-target"], tmp_path / "target")
    bare = load_pair(str(tmp_path / "target"), None, device="cpu")
    assert bare.head(EAGLE) is None
    save_degenerate(bare.target, "embedding", tmp_path / "eagle")
    found = load_pair(str(tmp_path / "target"), None, device="cpu")
    assert found.head(EAGLE) == str(tmp_path / "eagle")
    assert generate(found, PROMPTS[0], greedy(k=2, max_new=6)).totals.proposed > 0


def test_cli_runs_the_eagle_method_with_the_head_beside_the_target_or_given(model_dirs, capsys, tmp_path):
    from specviz.cli import main

    target = str(model_dirs["llama-target"])
    base = ["run", "--prompt", "def add", "--target", target, "--method", EAGLE, "--k", "3", "--device", "cpu"]
    assert main([*base, "--max-new-tokens", "8", "--json"]) == 0
    trace = json.loads(capsys.readouterr().out)
    assert trace["settings"]["method"] == EAGLE and len(trace["rounds"]) >= 1
    assert trace["meta"]["head"] == str(model_dirs["llama-target"].parent / "eagle")  # the head beside the target

    bare = load_pair(target, None, device="cpu")
    given = save_degenerate(bare.target, "embedding", tmp_path / "given")
    assert main([*base, "--max-new-tokens", "8", "--head", str(given)]) == 0
    assert f"{EAGLE}, K=3, greedy: 8 tokens" in capsys.readouterr().out

    assert main([*base, "--head", str(model_dirs["llama-truncated"])]) == 2
    assert "is not a feature head directory" in capsys.readouterr().err
    assert main([*base, "--plain"]) == 2
    assert "drop --method, or drop --plain" in capsys.readouterr().err


def test_bench_times_a_head_step_and_predicts_eagle_with_it(load):
    from specviz.measure.bench import run_bench

    pair = load("llama-target")  # the random head beside the tiny targets (tests/conftest.py)
    doc = run_bench(pair, [PROMPTS[0]], [2], RunSettings(max_new_tokens=6), lanes=(methods.PLAIN, EAGLE))
    costs = doc["costs"]
    assert doc["environment"]["heads"] == {EAGLE: pair.head(EAGLE)}  # which head the EAGLE lane drafted with
    assert costs["step_ms"][EAGLE] > 0 and costs["c_of"][EAGLE] == pytest.approx(
        costs["step_ms"][EAGLE] / costs["target_step_ms"]
    )
    row = next(r for r in doc["results"] if r["method"] == EAGLE)
    assert row["identical_to_plain"]
    if costs["implausible"] is None:  # a busy machine's timings build no prediction
        assert row["c"] == pytest.approx(costs["c_of"][EAGLE])
        assert row["predicted_speedup"] > 0


def test_bench_by_default_leaves_out_the_eagle_lane_for_a_target_without_a_head(model_dirs, tmp_path, capsys):
    import shutil

    from specviz.cli import main

    shutil.copytree(model_dirs["llama-target"], tmp_path / "alone" / "target")
    target = str(tmp_path / "alone" / "target")
    common = ["bench", "--target", target, "--draft", target, "--limit", "1", "--k", "1", "--max-new-tokens", "4"]
    out = tmp_path / "bench.json"
    assert main([*common, "--device", "cpu", "--json", str(out)]) == 0
    err = capsys.readouterr().err
    assert "skipped the eagle lane: no head for it beside the target" in err
    assert "skipped the eagle3 lane: no head for it beside the target" in err
    assert {EAGLE, methods.EAGLE3}.isdisjoint(json.loads(out.read_text())["settings"]["lanes"])
    assert main([*common, "--lanes", f"plain,{EAGLE}"]) == 2  # asked for by name: refused with the reason
    assert "needs a head trained for this target" in capsys.readouterr().err
