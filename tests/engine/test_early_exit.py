"""Self-speculation by early exit (engine/early_exit.py) on the bundled target, which was not trained for it: greedy
output equal to plain decoding on held-out prompts, the draft's q equal to the exit computed from scratch, the shared
cache equal to a plain target's after every round with no layer doing more work than a plain verify loop, Hugging
Face's generate(assistant_early_exit=E) agreeing round by round, and sampled output with the target's distribution
(a fixed-seed χ² that a lossy judge fails); the exactness lab's switches: an exit without the final norm is still
exact, drafts from it judged with the normed exit's q are not."""

from __future__ import annotations

import json

import first_two
import pytest
import torch
from transformers import DynamicCache
from transformers.generation import candidate_generator

from specviz import methods
from specviz.core.lab import EXIT_EXACT, EXIT_MISMATCHED, EXIT_NO_NORM
from specviz.core.sampling import SamplingSettings
from specviz.core.settings import RunSettings
from specviz.engine import proposers
from specviz.engine.compare import hf_generate
from specviz.engine.decode import decode_rounds, encode_prompt, generate
from specviz.engine.lab import exit_variants_at, two_token_samples
from specviz.engine.loading.models import ASSETS, load_pair
from specviz.errors import SettingsError

WORKLOADS = ASSETS / "workloads"
HELD_OUT = [json.loads(line)["prompt"] for line in (WORKLOADS / "code.jsonl").read_text().splitlines()[:4]]
HELD_OUT += [json.loads(line)["prompt"] for line in (WORKLOADS / "prose.jsonl").read_text().splitlines()[:2]]
SAMPLED = SamplingSettings(temperature=1.0, top_k=12)  # twelve tokens: every one expected often enough for χ²
SEEDS = 500
EE = methods.EARLY_EXIT


@pytest.fixture(scope="module")
def bundled():
    return load_pair(device="cpu", draft=None)


@pytest.fixture(scope="module")
def plain_ids(bundled):
    plain = RunSettings(method=methods.PLAIN, max_new_tokens=40, stop_at_eos=False)
    return [generate(bundled, prompt, plain).output_ids for prompt in HELD_OUT]


def early_exit(exit_layer: int = 4, k: int = 4, **changes) -> RunSettings:
    return RunSettings(method=EE, exit_layer=exit_layer, k=k, max_new_tokens=40, stop_at_eos=False, **changes)


@pytest.mark.slow
@pytest.mark.parametrize("exit_layer, k", [(2, 4), (4, 1), (6, 4), (9, 3)])
def test_greedy_early_exit_equals_plain_on_held_out_prompts(bundled, plain_ids, exit_layer, k):
    accepted = 0
    for prompt, plain in zip(HELD_OUT, plain_ids):
        run = generate(bundled, prompt, early_exit(exit_layer, k))
        assert run.output_ids == plain
        accepted += run.totals.accepted
    assert accepted > 0  # even an untrained exit guesses some tokens


@pytest.mark.slow
def test_greedy_early_exit_under_the_heuristic_k_schedule_equals_plain(bundled, plain_ids):
    run = generate(bundled, HELD_OUT[0], early_exit(6, k_schedule="heuristic"))
    assert run.output_ids == plain_ids[0]
    assert {r.schedule.k for r in run.rounds if r.schedule} != {4}  # K really moved


def exit_logits(bundled, ids: list[int], exit_layer: int) -> torch.Tensor:
    """(len(ids), V) the exit's logits from scratch: a full forward's residual after layer E, the final norm, the
    LM head (transformers' hidden_states[E] is the output of the E-th layer, index 0 being the embeddings)."""
    with torch.inference_mode():
        out = bundled.target(input_ids=torch.tensor([ids]), output_hidden_states=True)
        base = bundled.target.base_model
        return bundled.target.lm_head(base.norm(out.hidden_states[exit_layer][0]))[:, : bundled.vocab_size]


def test_the_drafts_q_is_the_exit_computed_from_scratch(bundled):
    """Every draft's q (sampled at T = 1, so q is the exit's softmax) equals norm + LM head on layer E's residual
    of a fresh full pass over the same tokens: the reused cache gives the same draft as recomputing everything."""
    settings = early_exit(4, 4, sampling=SamplingSettings(temperature=1.0), seed=3)
    prompt_ids = encode_prompt(bundled, HELD_OUT[1])
    captured = []
    original = proposers.EarlyExitDrafter.propose

    def keep(self, k, u, stop_below=None):
        proposal = original(self, k, u, stop_below)
        captured.append(proposal)
        return proposal

    committed = list(prompt_ids)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(proposers.EarlyExitDrafter, "propose", keep)
        rounds = list(decode_rounds(bundled, prompt_ids, settings))
    for rnd, proposal in zip(rounds[:6], captured):
        ids = committed + proposal.tokens.tolist()
        expected = torch.softmax(exit_logits(bundled, ids, 4)[len(committed) - 1 : len(ids) - 1].float(), -1)
        assert torch.allclose(proposal.q, expected, atol=1e-5)
        committed += list(rnd.committed)


class LayerRows:
    """Counts the token rows each decoder layer of the target runs (forward hooks)."""

    def __init__(self, model):
        self.rows = [0] * len(model.base_model.layers)
        self.handles = [
            layer.register_forward_hook(lambda _m, args, _out, i=i: self._add(i, args[0]))
            for i, layer in enumerate(model.base_model.layers)
        ]

    def _add(self, i: int, hidden: torch.Tensor) -> None:
        self.rows[i] += hidden.shape[1]

    def close(self) -> None:
        for handle in self.handles:
            handle.remove()


def test_the_draft_reuses_the_targets_cache_and_the_verify_pass_the_drafts_layers(bundled):
    """Both halves of LayerSkip's reuse, counted: layer 0 reads the prompt once (the prefill) and then, per round,
    the pending token and each draft once (the draft feeds n - 1 of them, the verify pass the last): exactly what
    layer L - 1 reads in the verify passes, so no layer does more work than in a plain verify loop."""
    settings = early_exit(4, 4)
    prompt_ids = encode_prompt(bundled, HELD_OUT[2])
    counter = LayerRows(bundled.target)
    try:
        rounds = list(decode_rounds(bundled, prompt_ids, settings))
    finally:
        counter.close()
    verify_rows = sum(1 + len(r.positions) for r in rounds)  # each round's pending token + its drafts
    assert counter.rows == [len(prompt_ids) - 1 + verify_rows] * 10


@pytest.mark.slow
def test_after_every_round_the_shared_cache_is_a_plain_targets_cache(bundled):
    """The cache the draft wrote into (layers < E) and the verify pass completed (layers >= E) holds, after each
    rollback, the keys and values a plain prefill of the committed tokens gives, in every layer."""
    settings = early_exit(3, 4)
    prompt_ids = encode_prompt(bundled, HELD_OUT[3])
    caches = []
    original = proposers.EarlyExitDrafter.advance

    def keep(self, committed, n_accepted, features=None):
        original(self, committed, n_accepted, features)
        layers = self.split.state.cache.layers
        caches.append([(layer.keys.clone(), layer.values.clone()) for layer in layers])

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(proposers.EarlyExitDrafter, "advance", keep)
        rounds = list(decode_rounds(bundled, prompt_ids, settings))
    committed = list(prompt_ids)
    for rnd, cache in zip(rounds[:8], caches):
        committed += list(rnd.committed)
        fresh = DynamicCache(config=bundled.target.config)
        with torch.inference_mode():
            bundled.target(input_ids=torch.tensor([committed[:-1]]), cache=fresh, use_cache=True)
        assert all(k.shape[2] == len(committed) - 1 for k, _ in cache)  # the last committed token is pending
        for (k, v), layer in zip(cache, fresh.layers):
            assert torch.allclose(k, layer.keys, atol=1e-4) and torch.allclose(v, layer.values, atol=1e-4)


@pytest.mark.parametrize("exit_layer", [0, 10, 11])
def test_an_exit_layer_the_target_does_not_have_is_refused_naming_l(bundled, exit_layer):
    if exit_layer < 1:
        with pytest.raises(SettingsError, match="exit layer E"):
            early_exit(exit_layer)
        return
    with pytest.raises(SettingsError, match=r"from 1 to 9: this target has L = 10 layers"):
        generate(bundled, HELD_OUT[0], early_exit(exit_layer))


def test_a_tree_shape_is_refused_with_the_reason():
    with pytest.raises(SettingsError, match="Early exit drafts a chain"):
        RunSettings(method=EE, tree=(2, 1))


def test_the_exit_layer_is_recorded_only_for_early_exit_runs():
    assert RunSettings(method=EE, exit_layer=6).to_dict()["exit_layer"] == 6
    assert "exit_layer" not in RunSettings(method=methods.DRAFT).to_dict()
    assert RunSettings.from_dict(RunSettings(method=EE, exit_layer=6).to_dict()).exit_layer == 6


@pytest.mark.slow
@pytest.mark.parametrize("exit_layer", [2, 6])
def test_hugging_faces_early_exit_agrees_round_by_round(bundled, monkeypatch, exit_layer):
    """generate(assistant_early_exit=E), greedy, K a round: the same text, and in every round the same number of
    drafts and of accepted drafts (transformers' num_matches, read where its candidate generator learns it)."""
    steps = []
    learn = candidate_generator.AssistedCandidateGenerator.update_candidate_strategy

    def record(self, input_ids, scores, num_matches):
        steps.append((scores.shape[1] - 1, int(num_matches)))  # (drafts, accepted): scores has one row per draft + 1
        return learn(self, input_ids, scores, num_matches)

    monkeypatch.setattr(candidate_generator.AssistedCandidateGenerator, "update_candidate_strategy", record)
    for prompt in HELD_OUT[:3]:
        steps.clear()
        settings = early_exit(exit_layer, 4)
        ours = generate(bundled, prompt, settings)
        theirs = hf_generate(bundled, encode_prompt(bundled, prompt), settings, methods.HF_EARLY_EXIT)
        assert theirs.output_ids == ours.output_ids
        mine = [(len(r.positions), sum(p.accepted for p in r.positions)) for r in ours.rounds]
        assert steps == mine[: len(steps)] and len(mine) - len(steps) <= 1  # its last pass may take no draft
    assert bundled.target.config.num_hidden_layers == 10  # the shared target's config is left as it was


def fits(bundled, prompt: str) -> tuple[float, float]:
    """χ² p-values of the first two committed tokens of sampled early-exit runs over SEEDS seeds
    (tests/first_two.py)."""
    return first_two.fits(bundled, prompt, SEEDS, SAMPLED, method=EE)


PROMPT = HELD_OUT[0]


@pytest.mark.slow
def test_sampled_early_exit_emits_the_targets_distribution(bundled):
    first, second = fits(bundled, PROMPT)
    assert first > 1e-3 and second > 1e-3


@pytest.mark.slow
def test_argmax_exit_drafts_judged_with_the_exits_softmax_fail_the_same_check(bundled, monkeypatch):
    """The control (the mistake in Draft & Verify's sampling path): the exit's argmax drafted (and fed back), its full
    softmax kept as q in min(1, p/q), which is not what the drafts were drawn from."""
    monkeypatch.setattr(proposers.early_exit, "sample", lambda q, u: q.argmax(-1))  # the early-exit drafter's draw
    first, second = fits(bundled, PROMPT)
    assert min(first, second) < 1e-3


@pytest.mark.parametrize("exit_layer", [1, 2])
@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_a_tiny_target_stays_exact_at_every_exit(model_dirs, exit_layer, temperature):
    """On a random 3-layer Llama: greedy equals plain, and a sampled run equals itself with the same seed (its
    rounds' drafts are exactly what the seed's uniforms draw)."""
    pair = load_pair(str(model_dirs["llama-target"]), None, device="cpu")
    sampling = SamplingSettings(temperature=temperature)
    settings = RunSettings(
        method=EE, exit_layer=exit_layer, k=3, max_new_tokens=24, stop_at_eos=False, seed=5, sampling=sampling
    )
    run = generate(pair, "def add(a, b):", settings)
    assert run.totals.committed == 24
    if temperature == 0:
        plain = generate(
            pair, "def add(a, b):", RunSettings(method=methods.PLAIN, max_new_tokens=24, stop_at_eos=False)
        )
        assert run.output_ids == plain.output_ids
    else:
        assert generate(pair, "def add(a, b):", settings).without_timings() == run.without_timings()


def test_a_decoder_it_cannot_split_is_refused_by_name(model_dirs):
    pair = load_pair(str(model_dirs["gpt2-target"]), None, device="cpu")
    with pytest.raises(SettingsError, match="Early exit splits a Llama-style decoder.*GPT2LMHeadModel"):
        generate(pair, "def add(a, b):", RunSettings(method=EE, exit_layer=1))


LOSSY_AT = json.loads((WORKLOADS / "code.jsonl").read_text().splitlines()[1])["prompt"]  # where the exits differ most


def test_leaving_out_the_final_norm_is_exact_and_judging_with_the_other_norm_is_not(bundled):
    """The lab's switches on the bundled target, exactly (engine/lab.py exit_variants_at): the raw-residual exit is
    another draft, still exact; drafts from it judged with the normed exit's q leave p by a visible margin here."""
    checks = {c.variant.key: c for c in exit_variants_at(bundled, LOSSY_AT, 6, SamplingSettings(1.0, 8))}
    exact, raw, mismatched = (checks[v.key] for v in (EXIT_EXACT, EXIT_NO_NORM, EXIT_MISMATCHED))
    assert exact.tv_from_p < 1e-12 and raw.tv_from_p < 1e-12
    assert abs(raw.accepted - exact.accepted) > 0.01  # the norm changes the draft, so its acceptance
    assert mismatched.tv_from_p > 0.05 and mismatched.tv_between_exits > 0.05


@pytest.mark.slow
@pytest.mark.parametrize("variant, lossy", [(EXIT_NO_NORM, False), (EXIT_MISMATCHED, True)])
def test_the_real_engine_with_each_switch_passes_or_fails_the_two_sample_test(bundled, variant, lossy):
    result = two_token_samples(
        bundled,
        LOSSY_AT,
        samples=300,
        k=1,
        sampling=SamplingSettings(1.0, 8),
        time_budget_s=1e6,
        exit_variant=variant.key,
        exit_layer=6,
    )
    assert (result.chi2.p_value < 1e-3) == lossy


def test_the_bench_skips_early_exit_lanes_a_target_cannot_run_unless_asked(model_dirs, capsys):
    from specviz.cli.bench import _exit_lanes_that_fit

    pair = load_pair(str(model_dirs["llama-target"]), None, device="cpu")  # L = 3
    lanes = (methods.PLAIN, EE, methods.HF_EARLY_EXIT)
    assert _exit_lanes_that_fit(pair, lanes, RunSettings(exit_layer=2), asked=False) == lanes
    assert _exit_lanes_that_fit(pair, lanes, RunSettings(exit_layer=4), asked=False) == (methods.PLAIN,)
    assert "this target has L = 3 layers" in capsys.readouterr().err
    with pytest.raises(SettingsError, match="from 1 to 2"):
        _exit_lanes_that_fit(pair, lanes, RunSettings(exit_layer=4), asked=True)
