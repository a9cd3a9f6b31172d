"""Block verification as the engine's verifier (--verify block): greedy runs equal plain decoding, sampled runs are
seeded, the trace records the verifier (token-by-token traces keep their JSON), a tree is refused with the reason,
and on the bundled pair at T = 1 it keeps at least as many tokens per round as token by token on the same drafts'
seeds."""

import pytest

from specviz.cli.main import main
from specviz.core.sampling import SamplingSettings
from specviz.core.settings import RunSettings
from specviz.core.trace_json import trace_from_json, trace_to_json
from specviz.engine.decode import generate
from specviz.errors import SettingsError

PROMPT = "def add(a, b):\n    return a + b\n\ndef sub(a, b):\n    return"


def settings(verifier: str, temperature: float = 0.0, seed: int = 0) -> RunSettings:
    sampling = SamplingSettings(temperature=temperature)
    return RunSettings(method="draft", k=4, max_new_tokens=24, seed=seed, sampling=sampling, verifier=verifier)


def test_greedy_block_verification_equals_plain_decoding(load):
    pair = load("llama-target", "llama-truncated")
    plain = generate(pair, PROMPT, RunSettings(method="plain", max_new_tokens=24))
    assert generate(pair, PROMPT, settings("block")).output_ids == plain.output_ids


def test_sampled_block_runs_are_seeded_and_the_trace_names_the_verifier(load):
    pair = load("llama-target", "llama-truncated")
    first, again = (generate(pair, PROMPT, settings("block", 1.0, seed=3)) for _ in range(2))
    assert first.output_ids == again.output_ids
    assert trace_from_json(trace_to_json(first)).settings.verifier == "block"
    assert "verifier" not in settings("token").to_dict()  # token-by-token traces keep the JSON they always had


def test_a_tree_or_an_unknown_verifier_is_refused_with_the_reason():
    with pytest.raises(SettingsError, match="Block verification judges a chain"):
        RunSettings(method="tree", tree=(2, 1), verifier="block")
    with pytest.raises(SettingsError, match="verifier must be one of token, block; got 'blocks'"):
        RunSettings(verifier="blocks")


@pytest.mark.slow
def test_on_the_bundled_pair_at_t_1_a_block_keeps_at_least_as_many_tokens_per_round():
    """40 seeds of the same prompt and drafter: τ with block verification against token by token (the drafts differ
    after the first round's outcomes, so the comparison is of means, with room for chance)."""
    from specviz.engine.loading.models import BUNDLED_DRAFT, BUNDLED_TARGET, load_pair

    pair = load_pair(BUNDLED_TARGET, BUNDLED_DRAFT, device="cpu")
    tau = {
        v: [generate(pair, PROMPT, settings(v, 1.0, seed)).totals.tau for seed in range(40)] for v in ("token", "block")
    }
    mean = {v: sum(t) / len(t) for v, t in tau.items()}
    assert mean["block"] >= mean["token"] - 0.05, mean


def test_the_command_line_takes_it_and_says_so(capsys):
    code = main(["run", "--prompt", "def add(a, b):", "--k", "3", "--max-new-tokens", "8", "--temperature", "1",
                 "--verify", "block"])  # fmt: skip
    assert code == 0 and "block verification" in capsys.readouterr().out


def test_a_block_verified_trace_is_animated_with_its_stop_tests_and_exported(tmp_path, capsys):
    """The round page's steps and the HTML export show a block's own decisions: each draft's stop test (u against
    h, with its weight), the kept prefix, and the residual of what the kept drafts still owe."""
    from specviz.core.trace_json import trace_from_json
    from specviz.viz import step_view, steps

    path = tmp_path / "block.json"
    args = ["run", "--prompt", "def add(a, b):", "--k", "4", "--max-new-tokens", "24", "--temperature", "1"]
    assert main([*args, "--verify", "block", "--seed", "3", "--json"]) == 0
    path.write_text(capsys.readouterr().out)
    trace = trace_from_json(path.read_text())
    said = []
    for cursor in steps.moments(trace):
        view = step_view.step_view(trace, cursor, step_view.ViewOptions())
        said += [b.content for b in view.blocks if b.kind == step_view.MARKDOWN and isinstance(b.content, str)]
    judged = [s for s in said if s.startswith("**Draft ")]
    assert judged and all(" weight w = min(1, " in s for s in judged)
    assert not any("min(1, p/q) = " in s and "**Accepted**" in s for s in said)  # no token-by-token verdicts
    assert any("Token by token, the same draws would have kept" in s for s in judged)
    if any(r.extra and r.extra.kind == "correction" for r in trace.rounds):
        assert any("from norm(max(0, w·p − q)) with w = " in s for s in said)
    assert main(["export-html", str(path), "-o", str(tmp_path / "x.html")]) == 0
