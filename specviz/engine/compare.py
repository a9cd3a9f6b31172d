"""Hugging Face's own generate() lanes, timed the same way as ours: plain, assisted (draft model), prompt lookup.

These are the reference implementations specviz is compared against in the race page and the benchmark. Padded
embedding rows past the shared vocabulary are suppressed so that greedy outputs are comparable token for token.
"""

from __future__ import annotations

import copy
import threading
import time
import weakref
from contextlib import contextmanager
from dataclasses import dataclass

import torch
from transformers.utils import is_sklearn_available

from specviz import methods
from specviz.core import schedule
from specviz.core.settings import RunSettings
from specviz.engine.early_exit import check_exit_layer
from specviz.engine.forward.lean import lean_refusal
from specviz.engine.loading.models import ModelPair, quietly
from specviz.errors import SettingsError

HF_LANES = tuple(name for name, m in methods.REGISTRY.items() if m.engine == methods.HF)


@dataclass(frozen=True)
class LaneRun:
    """What one generate() call produced and how long it took."""

    lane: str
    output_ids: tuple[int, ...]
    wall_s: float

    @property
    def tokens_per_s(self) -> float:
        return len(self.output_ids) / self.wall_s if self.wall_s > 0 else 0.0


def hf_generate(pair: ModelPair, prompt_ids: list[int], settings: RunSettings, lane: str, streamer=None) -> LaneRun:
    """Run transformers' generate() for one lane (a Hugging Face lane of the registry, or plain: generate() alone)
    with the run's sampling settings and K (constant schedule)."""
    method = methods.get(lane)
    if method.engine != methods.HF and method.name != methods.PLAIN:
        raise SettingsError(f"generate() runs plain or a Hugging Face lane ({', '.join(HF_LANES)}); got {lane!r}.")
    kwargs = _sampling_kwargs(pair, settings)
    if method.quantizes:  # the target's own low-bit copy as the assistant (engine/forward/quantized.py)
        kwargs.update(assistant_model=_assistant(quantized_assistant(pair, settings), settings))
    elif method.hf_option == methods.HF_ASSISTANT_MODEL:
        if pair.draft is None:
            raise SettingsError("Hugging Face assisted generation needs a draft model.")
        if method.crosses != (pair.crossing is not None):
            raise SettingsError(
                f"The {method.label} lane needs a draft with a tokenizer of its own, and only it takes one: use "
                f"{methods.HF_UAG} for such a draft, {methods.HF_ASSISTED} for one that shares the target's."
            )
        if method.crosses:
            draft = _pruned_assistant(pair) if not settings.sampling.greedy else pair.draft
            kwargs.update(tokenizer=pair.tokenizer, assistant_tokenizer=pair.crossing.draft_tokenizer)
            kwargs.update(assistant_model=_assistant(draft, settings))
        else:
            kwargs.update(assistant_model=_assistant(pair.draft, settings))
    elif method.hf_option == methods.HF_PROMPT_LOOKUP_TOKENS:
        kwargs.update(prompt_lookup_num_tokens=settings.k, max_matching_ngram_size=settings.ngram_max)
    model = pair.target
    if method.hf_option == methods.HF_ASSISTANT_EARLY_EXIT:
        check_exit_layer(pair.target, settings.exit_layer)
        model = _early_exit_target(pair.target, settings)
        kwargs.update(assistant_early_exit=settings.exit_layer)
    if streamer is not None:
        kwargs["streamer"] = streamer
    ids = torch.tensor([prompt_ids], device=pair.device)
    with _own_global_rng(pair.device, settings.seed), torch.inference_mode():
        start = time.perf_counter()  # once the generator is ours: waiting for it is not decoding
        out = quietly(model.generate, ids, attention_mask=torch.ones_like(ids), **kwargs)
        if pair.device.type == "cuda":
            torch.cuda.synchronize(pair.device)
        wall_s = time.perf_counter() - start
    return LaneRun(lane, tuple(out[0, ids.shape[1] :].tolist()), wall_s)


_GLOBAL_RNG = threading.Lock()


@contextmanager
def _own_global_rng(device: torch.device, seed: int):
    """generate() samples from torch's global generator (it takes no generator of its own): hold it alone, seeded,
    and give it back as it was, so that no other user of it (another browser session in the app's one process, a
    thread) sees its stream moved, and its own draws are the same whoever runs beside it."""
    accelerator = [] if device.type == "cpu" else [device.index or 0]
    with _GLOBAL_RNG, torch.random.fork_rng(devices=accelerator, device_type=device.type):
        torch.manual_seed(seed)
        yield


def quantized_assistant(pair: ModelPair, settings: RunSettings):
    """The target's copy at the run's bits as a transformers model, refused where the lean forward cannot run the
    target (the copy's matrices are the lean ones, so specviz's lane and this one draft alike)."""
    from specviz.engine.forward.quantized import hf_quantized_copy

    why = lean_refusal(pair.target)
    if why:
        raise SettingsError(f"Hugging Face's lane with the target's quantized copy rounds its linear maps, but {why}.")
    return hf_quantized_copy(pair.target, settings.quant)


def assisted_refusal(settings: RunSettings) -> str:
    """Why Hugging Face's assisted generate() cannot run these settings here ('' when it can): transformers refits a
    confidence threshold only with scikit-learn, which specviz does not install."""
    if settings.k_schedule == schedule.CONFIDENCE and settings.fit_threshold and not is_sklearn_available():
        return (
            "Hugging Face's assisted generate() refits its confidence threshold only with scikit-learn installed, and "
            "it is not here: give that lane a fixed confidence threshold (turn off the refit), or leave the lane out."
        )
    return ""


def _assistant(draft, settings: RunSettings):
    """The draft as generate()'s assistant, with the run's K schedule (core/schedule.py): K tokens a round and no
    confidence stop for the constant one; num_assistant_tokens_schedule="heuristic" starting at K; or K as the cap
    with assistant_confidence_threshold for the confidence one (a fitted threshold only where transformers can fit
    it, with scikit-learn installed).

    transformers reads these settings from the assistant's own generation_config, not from generate()'s arguments,
    and the heuristic schedule writes back into it: so the shared, cached draft is never handed over itself, but a
    shallow copy (same weights) with a config of its own.
    """
    config = copy.deepcopy(draft.generation_config)
    config.num_assistant_tokens = settings.k
    heuristic = settings.k_schedule == schedule.HEURISTIC
    config.num_assistant_tokens_schedule = schedule.HEURISTIC if heuristic else schedule.CONSTANT
    config.assistant_confidence_threshold = 0.0
    if assisted_refusal(settings):
        raise SettingsError(assisted_refusal(settings))
    if settings.k_schedule == schedule.CONFIDENCE:
        config.assistant_confidence_threshold = settings.confidence_threshold
    assistant = copy.copy(draft)
    assistant.generation_config = config
    return assistant


_PRUNED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # a crossing pair's VocabMap -> its HF assistant


def _pruned_assistant(pair: ModelPair):
    """The draft as transformers' sampled universal assisted generation wants it: on first use it prunes the
    assistant's LM head and remaps its input embeddings to the shared tokens in place, and caches that translator per
    tokenizer pair (AssistantVocabTranslatorCache). The shared draft is never handed over: one copy per pair, whose
    top and base modules are its own (the weights are shared), is pruned once and reused."""
    pruned = _PRUNED.get(pair.crossing)
    if pruned is None:
        base = copy.copy(pair.draft.base_model)
        base._modules = dict(base._modules)
        pruned = copy.copy(pair.draft)
        pruned._modules = {**pruned._modules, pair.draft.base_model_prefix: base}
        _PRUNED[pair.crossing] = pruned
    return pruned


def _early_exit_target(target, settings: RunSettings):
    """The target as generate()'s own early-exit assistant: transformers drafts by setting the base model's
    config.num_hidden_layers to E for the draft and back, and reads K from the model's generation_config. The cached
    target is shared by every browser session, so it is never handed over itself: a shallow copy (same weights)
    whose base model is a shallow copy with a config of its own, and with a generation_config of its own (K a round,
    the constant schedule, no confidence stop)."""
    base = copy.copy(target.base_model)
    base._modules = dict(base._modules)  # the layers themselves are shared; only the container is new
    base.config = copy.deepcopy(base.config)
    model = copy.copy(target)
    model._modules = {**model._modules, target.base_model_prefix: base}
    model.generation_config = copy.deepcopy(target.generation_config)
    model.generation_config.num_assistant_tokens = settings.k
    model.generation_config.num_assistant_tokens_schedule = schedule.CONSTANT
    model.generation_config.assistant_confidence_threshold = 0.0
    return model


def _sampling_kwargs(pair: ModelPair, settings: RunSettings) -> dict:
    eos = sorted(pair.eos_ids) if settings.stop_at_eos else None
    width = pair.target.get_output_embeddings().weight.shape[0]
    kwargs = dict(
        max_new_tokens=settings.max_new_tokens,
        min_new_tokens=0 if settings.stop_at_eos else settings.max_new_tokens,
        eos_token_id=eos,
        pad_token_id=sorted(pair.eos_ids)[0] if pair.eos_ids else 0,
        suppress_tokens=list(range(pair.vocab_size, width)) or None,
    )
    s = settings.sampling
    if s.greedy:
        return {**kwargs, "do_sample": False}
    return {**kwargs, "do_sample": True, "temperature": s.temperature, "top_k": s.top_k or None, "top_p": s.top_p}
