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
    assert costs.draft_model_step_s > 0 and set(costs.draft_step_s) == {"draft"}
    assert costs.target_step_s > 0
    assert len(costs.verify_s) == 4
    assert costs.c == pytest.approx(costs.draft_step_s["draft"] / costs.target_step_s)
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
    assert costs.draft_step_s == {} and costs.draft_model_step_s is None
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
    lean = measure_costs(pair, k_max=2, repeats=1, methods=["early_exit"], exit_layer=1)
    hf_step = lean.reference_step_s["early_exit"]
    assert dict(lean.forward)["target"] == "lean" and hf_step > 0 and lean.exit_layer == 1
    assert lean.c_of("early_exit") == pytest.approx(lean.draft_step_s["early_exit"] / hf_step)
    assert lean.to_dict()["reference_step_ms"]["early_exit"] == pytest.approx(hf_step * 1e3)
    hf = measure_costs(pair, k_max=2, repeats=1, methods=["early_exit"], exit_layer=1, forward="hf")
    assert hf.reference_step_s == {}  # the target step is already Hugging Face's
    assert hf.c_of("early_exit") == pytest.approx(hf.draft_step_s["early_exit"] / hf.target_step_s)


def test_each_drafters_c_and_what_to_time_for_it():
    from specviz.engine.costs import C_DRAFTERS, MeasuredCosts, timing_options

    steps = {"draft": 0.001, "eagle": 0.002, "medusa": 0.001, "early_exit": 0.003, "mtp": 0.0025, "quantized": 0.004}
    costs = MeasuredCosts(
        "t", "d", "cpu", "float32", 30, 5, steps, 0.01, (0.011,), pass_drafts={"medusa": 4}, exit_layer=3
    )
    assert [costs.c_of(m) for m in C_DRAFTERS] == pytest.approx([0.1, 0.2, None, 0.1, 0.25, 0.3, 0.4, 0.0, 0.0])
    assert costs.step_s_of("eagle") == pytest.approx(0.002) and costs.step_s_of("ngram") is None
    assert costs.step_s_of("eagle3") is None  # not timed
    assert costs.c_of("hf_early_exit") == costs.c_of("early_exit")  # an HF lane is its specviz method's drafter
    assert costs.c_of("tree") == costs.c_of("tli") == costs.c  # every draft-model method drafts with the draft's step
    assert [timing_options(m, 3) for m in C_DRAFTERS] == [
        {}, {"methods": ("eagle",)}, {"methods": ("eagle3",)}, {"methods": ("medusa",)}, {"methods": ("mtp",)},
        {"methods": ("early_exit",), "exit_layer": 3}, {"methods": ("quantized",)}, {}, {},
    ]  # fmt: skip


def test_a_number_for_the_draft_step_is_the_draft_models_step():
    """Callers that give one number (the form before steps were keyed by method) time the draft model alone."""
    from specviz.engine.costs import MeasuredCosts

    costs = MeasuredCosts("t", "d", "cpu", "float32", 30, 5, 0.001, 0.01, (0.011,))
    assert costs.draft_step_s == {"draft": 0.001} and costs.c == pytest.approx(0.1)
    assert MeasuredCosts("t", "d", "cpu", "float32", 30, 5, None, 0.01, (0.011,)).draft_step_s == {}


def test_measured_costs_read_back_from_their_json_and_from_the_keys_written_per_head():
    """to_dict's JSON reads back to the same costs; a bench file written when each head had its own key (head_c,
    head3_step_ms, medusa_pass_ms, ...) and the model card's measurements.json read too, each head's c kept."""
    import json
    from pathlib import Path

    from specviz.engine.costs import MeasuredCosts

    steps = {"draft": 0.001, "eagle3": 0.002, "medusa": 0.0005, "early_exit": 0.003}
    costs = MeasuredCosts(
        "t", "d", "cpu", "float32", 30, 5, steps, 0.01, (0.011, 0.012), draft_vocab=64, untrimmed_draft_step_s=0.0015,
        pass_drafts={"medusa": 4}, exit_layer=2, reference_step_s={"early_exit": 0.012}, forward=(("target", "lean"),),
    )  # fmt: skip
    again = MeasuredCosts.from_dict(json.loads(json.dumps(costs.to_dict())))
    assert (again.pass_drafts, again.exit_layer, again.forward) == (costs.pass_drafts, 2, costs.forward)
    assert again.untrimmed_c == pytest.approx(costs.untrimmed_c)
    assert [again.c_of(m) for m in steps] == pytest.approx([costs.c_of(m) for m in steps])

    root = Path(__file__).resolve().parents[2]
    old = json.loads((root / "assets/bench/cpu-float32-medusa-k4.json").read_text())["costs"]
    assert "medusa_c" in old and "step_ms" not in old  # written before costs were keyed by method
    read = MeasuredCosts.from_dict(old)
    assert read.c_of("medusa") == pytest.approx(old["medusa_c"]) and read.c == pytest.approx(old["c"])
    assert read.pass_drafts == {"medusa": old["medusa_heads"]}
    assert read.verify_relative == pytest.approx(old["verify_relative"])
    old3 = json.loads((root / "assets/bench/cpu-float32-eagle3-k4.json").read_text())["costs"]
    assert MeasuredCosts.from_dict(old3).c_of("eagle3") == pytest.approx(old3["head3_c"])
    card = json.loads((root / "assets/models/pystdlib/measurements.json").read_text())["speed"][0]["costs"]
    from_card = MeasuredCosts.from_dict(card)  # the card keeps v(K) relative to the target step, no verify_ms
    assert from_card.c == pytest.approx(card["c"]) and from_card.verify_relative == pytest.approx(
        card["verify_relative"]
    )
