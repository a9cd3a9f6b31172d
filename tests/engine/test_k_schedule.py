"""Adaptive draft length (core/schedule.py) on real models: greedy output equals plain decoding under every schedule,
and transformers' generate() with the same schedule drafts the same number of tokens in every round."""

import json

import pytest
from transformers.generation.candidate_generator import AssistedCandidateGenerator

from specviz import methods
from specviz.core.schedule import CONFIDENCE, CONSTANT, HEURISTIC, STOP_CONFIDENCE
from specviz.core.settings import RunSettings
from specviz.core.trace_json import trace_from_json, trace_to_json
from specviz.engine.compare import hf_generate
from specviz.engine.decode import encode_prompt, generate
from specviz.engine.loading.models import ASSETS, load_pair
from specviz.errors import SettingsError

CODE = [json.loads(line)["prompt"] for line in (ASSETS / "workloads" / "code.jsonl").read_text().splitlines()[:2]]
SCHEDULES = [
    dict(k_schedule=CONSTANT),
    dict(k_schedule=HEURISTIC),
    dict(k_schedule=CONFIDENCE, confidence_threshold=0.4),
    dict(k_schedule=CONFIDENCE, fit_threshold=True),
]


@pytest.fixture(scope="module")
def bundled():
    return load_pair(device="cpu")


@pytest.mark.parametrize("method", [methods.DRAFT, methods.EAGLE, methods.EAGLE3])
@pytest.mark.parametrize("schedule", SCHEDULES, ids=lambda s: "-".join(map(str, s.values())))
def test_greedy_equals_plain_under_every_schedule(load, method, schedule):
    pair = load("llama-target", "llama-truncated")
    prompt = "for item in items:\n    print(item)\n"
    plain = generate(pair, prompt, RunSettings(method=methods.PLAIN, max_new_tokens=24))
    run = generate(pair, prompt, RunSettings(method=method, k=3, max_new_tokens=24, **schedule))
    assert run.output_ids == plain.output_ids
    assert trace_to_json(trace_from_json(trace_to_json(run))) == trace_to_json(run)  # the schedule record round-trips
    if schedule["k_schedule"] == CONSTANT:
        assert all(r.schedule is None for r in run.rounds) and '"schedule"' not in trace_to_json(run)
    else:
        assert all(r.schedule is not None for r in run.rounds)


def _hf_rounds(monkeypatch, pair, prompt_ids, settings):
    """generate()'s output and, per round, (the K its schedule allowed, the drafts it made), read by wrapping the
    installed transformers' AssistedCandidateGenerator.get_candidates."""
    seen = []
    original = AssistedCandidateGenerator.get_candidates

    def spy(self, input_ids, **kwargs):
        allowed = int(self.num_assistant_tokens)
        ids, logits = original(self, input_ids, **kwargs)
        seen.append((allowed, ids.shape[1] - input_ids.shape[1]))
        return ids, logits

    monkeypatch.setattr(AssistedCandidateGenerator, "get_candidates", spy)
    run = hf_generate(pair, prompt_ids, settings, methods.HF_ASSISTED)
    return run.output_ids, seen


@pytest.mark.slow
@pytest.mark.parametrize("schedule", SCHEDULES[1:3], ids=lambda s: "-".join(map(str, s.values())))
def test_hugging_face_generate_drafts_the_same_per_round(bundled, monkeypatch, schedule):
    """The bundled pair, greedy: same text and, round by round, the same K allowed and the same drafts made (the
    heuristic's K 4, 6, 5, ... and the confidence stop's early ends) as transformers' own schedule."""
    for prompt in CODE:
        settings = RunSettings(method=methods.DRAFT, k=4, max_new_tokens=48, **schedule)
        ours = generate(bundled, prompt, settings)
        theirs, rounds = _hf_rounds(monkeypatch, bundled, encode_prompt(bundled, prompt), settings)
        assert theirs == ours.output_ids
        mine = [(r.schedule.k, len(r.positions)) for r in ours.rounds]
        if schedule["k_schedule"] == CONFIDENCE:
            assert any(r.schedule.stop == STOP_CONFIDENCE for r in ours.rounds)  # the stop did act
        else:
            assert len({k for k, _ in mine}) > 2  # K did move
        assert rounds == mine


def test_hugging_face_lane_refuses_a_fitted_threshold_it_cannot_fit(bundled):
    settings = RunSettings(method=methods.DRAFT, k=4, max_new_tokens=8, k_schedule=CONFIDENCE, fit_threshold=True)
    with pytest.raises(SettingsError, match="scikit-learn"):
        hf_generate(bundled, encode_prompt(bundled, CODE[0]), settings, methods.HF_ASSISTED)


@pytest.mark.slow
@pytest.mark.parametrize(
    "schedule",
    [dict(k_schedule=HEURISTIC), dict(k_schedule=CONFIDENCE, confidence_threshold=0.6)],
    ids=["heuristic", "confidence-0.6"],
)
def test_sampled_output_follows_the_target_under_adaptive_k(load, schedule):
    """Sampled at temperature 1 (top-k 3): the first three tokens of 300 plain runs and of 300 adaptive runs (the
    heuristic's K moves after round 1, the confidence stop acts on the sampled drafts) pass a χ² homogeneity test;
    the runs do draft different lengths, so the schedule was at work."""
    from collections import Counter

    import torch

    from specviz.core.chisq import chi2_homogeneity
    from specviz.core.sampling import SamplingSettings
    from specviz.engine.decode import decode_rounds

    pair = load("llama-target", "llama-truncated")
    ids = encode_prompt(pair, "def add(a, b):")
    sampling = SamplingSettings(1.0, top_k=3)
    counts = {methods.PLAIN: Counter(), methods.DRAFT: Counter()}
    lengths = set()
    for seed in range(300):
        for method in counts:
            settings = RunSettings(
                method=method, k=2, sampling=sampling, max_new_tokens=3, seed=seed, stop_at_eos=False, **schedule
            )
            rounds = list(decode_rounds(pair, ids, settings))
            counts[method][tuple(t for r in rounds for t in r.committed)] += 1
            if method == methods.DRAFT:
                lengths |= {(r.schedule.k, len(r.positions)) for r in rounds}
    keys = sorted(counts[methods.PLAIN].keys() | counts[methods.DRAFT].keys())
    plain, spec = (torch.tensor([counts[m][key] for key in keys], dtype=torch.float64) for m in counts)
    assert chi2_homogeneity(plain, spec).p_value > 1e-4
    assert len(lengths) > 1
