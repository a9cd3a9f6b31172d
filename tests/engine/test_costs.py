"""Measured costs: a draft step, a target step and verify passes timed on a real (tiny) pair, caches left as found."""

import pytest

from specviz.core.theory import TheoryInputs, analyse
from specviz.engine.costs import DEFAULT_PROMPT, measure_costs
from specviz.errors import SettingsError


@pytest.mark.parametrize("arch", ["llama", "gpt2"])
def test_measure_costs_on_a_tiny_pair(load, arch):
    pair = load(f"{arch}-target", f"{arch}-truncated")
    progress = []
    costs = measure_costs(pair, k_max=4, repeats=2, on_progress=lambda done, total: progress.append((done, total)))
    assert progress == [(1, 3), (2, 3), (3, 3)]  # a warm-up round, then 2 rounds each timing every kind once
    assert costs.draft_step_s > 0
    assert costs.target_step_s > 0
    assert len(costs.verify_s) == 4
    assert costs.c == pytest.approx(costs.draft_step_s / costs.target_step_s)
    assert costs.verify_relative == pytest.approx(tuple(v / costs.target_step_s for v in costs.verify_s))
    assert costs.context_tokens > 1
    assert costs.repeats == 2
    assert costs.device == "cpu"
    verify = costs.verify_cost()
    assert verify.kind == "measured"
    assert verify.k_max == 4
    assert verify(3) == costs.verify_relative[2]
    result = analyse(TheoryInputs(alpha=0.8, k=3, c=costs.c, verify=verify))
    assert result.speedup == pytest.approx(result.expected_tokens / (3 * costs.c + costs.verify_relative[2]))
    doc = costs.to_dict()
    assert len(doc["verify_ms"]) == 4
    assert doc["target"].endswith(f"{arch}-target")


@pytest.fixture
def timed_starts(monkeypatch):
    """Per timing measure_costs takes, the cache it started from: (which model, (cache length, pending tokens))."""
    from specviz.engine import costs

    starts, timed = [], costs._timed

    def recording(call, model, device):
        starts.append((id(model), (model.state.length, tuple(model.state.pending))))
        return timed(call, model, device)

    monkeypatch.setattr(costs, "_timed", recording)
    return starts


def test_every_timing_starts_from_the_same_cache(load, timed_starts):
    """Each timing reads the pending token (+ K drafts) on top of the prompt's cache and is then cropped back, so the
    next timing of any kind starts from the same state: a verify pass that was not rolled back would grow the cache."""
    pair = load("llama-target", "llama-truncated")
    costs = measure_costs(pair, k_max=3, repeats=2)
    last_prompt_token = pair.tokenizer.encode(DEFAULT_PROMPT)[costs.context_tokens - 1]
    assert len(timed_starts) == (2 + 3) * (1 + 2)  # draft step, target step, 3 verify passes; warm-up + 2 repeats
    assert len({model for model, _ in timed_starts}) == 2  # the target's cache and the draft's
    assert {start for _, start in timed_starts} == {(costs.context_tokens - 1, (last_prompt_token,))}


def test_without_a_draft_only_the_target_is_timed(load):
    costs = measure_costs(load("llama-target"), k_max=3, repeats=1)
    assert costs.draft_step_s is None
    assert costs.c is None
    assert costs.to_dict()["draft_step_ms"] is None
    assert costs.target_step_s > 0
    assert len(costs.verify_relative) == 3


def test_bad_measurement_requests_are_refused(load):
    pair = load("llama-target", "llama-truncated")
    with pytest.raises(SettingsError, match="largest K"):
        measure_costs(pair, k_max=17)
    with pytest.raises(SettingsError, match="repeats"):
        measure_costs(pair, repeats=0)


def test_one_token_prompt_still_times_on_top_of_a_cache(load, timed_starts):
    pair = load("llama-target", "llama-truncated")
    costs = measure_costs(pair, k_max=2, repeats=1, prompt="x")
    assert costs.context_tokens == 1
    assert len(costs.verify_s) == 2
    (x,) = pair.tokenizer.encode("x")
    assert len(timed_starts) == (2 + 2) * (1 + 1)
    assert {start for _, start in timed_starts} == {(1, (x,))}  # "x" is in the cache and is read again as pending


def test_an_early_exit_step_is_set_against_the_target_step_of_the_forward_it_runs(load):
    """Early exit runs Hugging Face's forward; under the lean default its c is against a Hugging Face target step,
    timed beside the lean one, not against the lean step (which made E = 4 of 10 layers cost about a whole step)."""
    pair = load("llama-target", "llama-truncated")
    lean = measure_costs(pair, k_max=2, repeats=1, exit_layer=1)
    assert dict(lean.forward)["target"] == "lean" and lean.exit_target_step_s > 0
    assert lean.exit_c == pytest.approx(lean.exit_step_s / lean.exit_target_step_s)
    assert lean.to_dict()["exit_target_step_ms"] == pytest.approx(lean.exit_target_step_s * 1e3)
    hf = measure_costs(pair, k_max=2, repeats=1, exit_layer=1, forward="hf")
    assert hf.exit_target_step_s is None  # the target step is already Hugging Face's
    assert hf.exit_c == pytest.approx(hf.exit_step_s / hf.target_step_s)


def test_each_drafters_c_and_what_to_time_for_it():
    from specviz.engine.costs import C_DRAFTERS, MeasuredCosts, timing_options

    costs = MeasuredCosts(
        "t", "d", "cpu", "float32", 30, 5, 0.001, 0.01, (0.011,),
        head_step_s=0.002, medusa_pass_s=0.004, medusa_heads=4, exit_layer=3, exit_step_s=0.003, mtp_step_s=0.0025,
    )  # fmt: skip
    assert [costs.c_of(m) for m in C_DRAFTERS] == pytest.approx([0.1, 0.2, None, 0.1, 0.25, 0.3, 0.0, 0.0])
    assert costs.step_s_of("eagle") == pytest.approx(0.002) and costs.step_s_of("ngram") is None
    assert costs.step_s_of("eagle3") is None  # not timed
    assert [timing_options(m, 3) for m in C_DRAFTERS] == [
        {}, {"head": True}, {"head3": True}, {"medusa": True}, {"mtp": True}, {"exit_layer": 3}, {}, {},
    ]  # fmt: skip
