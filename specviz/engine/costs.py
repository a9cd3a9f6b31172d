"""Measure what the speedup formula needs on this machine: one draft step, one target step, and a verify pass for K.

Every timing runs the models the way the engine does (`CachedModel`: a KV cache holding the prompt, then one step or
one pass over 1 + K tokens) and then crops the cache back, so each repeat starts from the same state. The reported
numbers are medians of several repeats after a warm-up, the kinds of timing interleaved within each repeat.

    c     = draft step / target step
    v(K)  = verify pass over K drafts (K + 1 tokens) / target step
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import torch

from specviz import methods as registry  # measure_costs takes an argument called methods
from specviz.core.settings import FORWARD_AUTO, FORWARD_HF
from specviz.core.theory import MAX_K, VerifyCost
from specviz.engine.forward.kv import CachedModel
from specviz.engine.forward.lean import chosen_forward
from specviz.engine.loading.models import ModelPair, recorded_name, synchronize
from specviz.errors import SettingsError

NOISE_FACTOR = 1.5  # a pass over fewer tokens timed this many times slower than one over more: noise, not cost
MIN_VERIFY_RELATIVE = 0.9  # a pass over K + 1 tokens reads at least the same weights as a step: below this, noise
# The drafters whose c the calculator measures: each chain proposer of one tokenizer, those that run a model first
# (the draft model, the feature heads, early exit), then the lookups (c 0).
C_DRAFTERS = tuple(sorted(registry.PROPOSERS, key=lambda name: registry.get(name).draft_cost == registry.HOST_LOOKUP))
Progress = Callable[[int, int], None]  # (rounds of timings done, rounds in all, the warm-up included)
DEFAULT_PROMPT = (
    "def mean(values):\n    return sum(values) / len(values)\n\n\nclass Stack:\n    def push(self, item):\n"
)


@dataclass(frozen=True)
class MeasuredCosts:
    """Median seconds for each kind of forward, and the ratios the calculator uses."""

    target_name: str
    draft_name: str
    device: str
    dtype: str
    context_tokens: int  # prompt length the timings were taken at
    repeats: int
    draft_step_s: Mapping[str, float]  # drafter -> seconds one drafted token costs: the draft model under DRAFT
    #   (absent when the pair has none), each method timed by its own probe under its name (a pass that drafts
    #   several tokens: its share per token). A number or None is the draft model's alone (the earlier form).
    target_step_s: float
    verify_s: tuple[float, ...]  # verify_s[K - 1]: one pass over 1 + K tokens
    draft_vocab: int = 0  # the draft vocabulary the draft model was timed with (0 = every token)
    untrimmed_draft_step_s: float | None = None  # the whole draft, when its step was timed trimmed: what Hugging
    #                                              Face's assisted generation pays per draft step
    pass_drafts: Mapping[str, int] = field(default_factory=dict)  # drafter -> the tokens one timed pass drafted,
    #                                                               where more than one (parallel heads: one each)
    exit_layer: int = 0  # the E an early-exit draft step was timed at (0 = not timed)
    reference_step_s: Mapping[str, float] = field(default_factory=dict)  # drafter -> a target step on the forward
    #   it runs, where that is not the one the other timings ran (early exit on Hugging Face's under lean): its c
    #   compares like with like
    # (model, forward) each timed model ran (engine/forward/lean.py); () = unrecorded
    forward: tuple[tuple[str, str], ...] = ()

    def __post_init__(self):
        if self.draft_step_s is None or isinstance(self.draft_step_s, (int, float)):  # the draft model's step alone
            steps = {} if self.draft_step_s is None else {registry.DRAFT: float(self.draft_step_s)}
            object.__setattr__(self, "draft_step_s", steps)

    @property
    def c(self) -> float | None:
        """Draft step cost as a fraction of a target step (None without a draft model)."""
        return self.c_of(registry.DRAFT)

    @property
    def draft_model_step_s(self) -> float | None:
        """Seconds of one draft-model step (None without a draft model)."""
        return self.draft_step_s.get(registry.DRAFT)

    def c_of(self, method: str) -> float | None:
        """c of the drafter `method` drafts with: its measured step (per drafted token) over a target step, 0 for a
        host lookup (a search over tokens already known runs no model), None when this measurement did not time it."""
        entry = registry.get(method)
        if entry.draft_cost == registry.HOST_LOOKUP:
            return 0.0
        drafter = entry.timed_as
        step = None if drafter is None else self.draft_step_s.get(drafter)
        if step is None:
            return None
        return step / self.reference_step_s.get(drafter, self.target_step_s)

    def step_s_of(self, method: str) -> float | None:
        """The measured seconds of one draft step of `method` (a pass's share per draft), None when untimed or when
        it runs no model (a host lookup)."""
        drafter = registry.get(method).timed_as
        return None if drafter is None else self.draft_step_s.get(drafter)

    @property
    def untrimmed_c(self) -> float | None:
        """c of the whole draft (its full LM head): the same as c unless the draft step was timed trimmed."""
        step = self.untrimmed_draft_step_s if self.draft_vocab else self.draft_model_step_s
        return None if step is None else step / self.target_step_s

    @property
    def verify_relative(self) -> tuple[float, ...]:
        """v(K) for K = 1..k_max, in target steps."""
        return tuple(v / self.target_step_s for v in self.verify_s)

    @property
    def verify_monotone(self) -> tuple[float, ...]:
        """v(K) as a cost must be, never dearer for fewer tokens: each v(K) is the cheapest pass timed at K or more
        drafts. A pass over fewer tokens reads the same weights as one over more and attends to less, so a v(1) timed
        above v(4) is the clock noise of a busy machine; the predictions take this, and `verify_noise` says so."""
        v = self.verify_relative
        return tuple(min(v[i:]) for i in range(len(v)))

    @property
    def verify_noise(self) -> str:
        """Which v(K) were timed above a v at a larger K and taken down to it, in words ("" when none were)."""
        timed, kept = self.verify_relative, self.verify_monotone
        moved = [k for k in range(len(timed)) if kept[k] < timed[k]]
        if not moved:
            return ""
        parts = []
        for k in moved:
            larger = next(j for j in range(k + 1, len(timed)) if timed[j] == kept[k])
            parts.append(f"v({k + 1}) was timed at {timed[k]:.2f} target steps, above v({larger + 1}) at {kept[k]:.2f}")
        return (
            "; ".join(parts)
            + ": a verify pass over fewer tokens cannot cost more than one over more, so that is timing "
            "noise, and the predictions take each v(K) as the cheapest pass timed at K or more drafts."
        )

    @property
    def k_max(self) -> int:
        return len(self.verify_s)

    def verify_cost(self) -> VerifyCost:
        return VerifyCost.measured(self.verify_relative)

    @property
    def implausible(self) -> str | None:
        """Why these timings cannot be true (a pass over K + 1 tokens well under one step, a free draft), or None.
        Such costs come from a noisy machine; no prediction is built on them."""
        cheapest = min(self.verify_relative)
        if cheapest < MIN_VERIFY_RELATIVE:
            k = self.verify_relative.index(cheapest) + 1
            return (
                f"a verify pass over {k + 1} tokens timed at {cheapest:.2f} of a one-token step, which it cannot "
                "be: the machine was busy while timing. Run again on a quieter machine."
            )
        if self.c is not None and self.c <= 0:
            return "the draft step timed at no cost at all: the timings are broken. Run again."
        v = self.verify_relative
        for small in range(len(v)):
            for large in range(small + 1, len(v)):
                if v[small] > NOISE_FACTOR * v[large]:
                    return (
                        f"a verify pass over {small + 2} tokens timed at {v[small]:.2f} steps but one over {large + 2} "
                        f"at {v[large]:.2f}: fewer tokens cannot cost {NOISE_FACTOR:g}x more, so the machine was busy "
                        "while timing. Run again on a quieter machine."
                    )
        return None

    def to_dict(self) -> dict:
        """The measurement as JSON (from_dict reads it back, and the keys written before they were by method)."""
        ms = lambda seconds: None if seconds is None else seconds * 1e3  # noqa: E731
        return {
            "target": self.target_name,
            "draft": self.draft_name,
            "device": self.device,
            "dtype": self.dtype,
            "context_tokens": self.context_tokens,
            "repeats": self.repeats,
            "draft_step_ms": ms(self.draft_model_step_s),
            "target_step_ms": self.target_step_s * 1e3,
            "verify_ms": [v * 1e3 for v in self.verify_s],
            "c": self.c,
            "draft_vocab": self.draft_vocab,
            "untrimmed_draft_step_ms": ms(self.untrimmed_draft_step_s),
            "untrimmed_c": self.untrimmed_c,
            "step_ms": {name: ms(s) for name, s in self.draft_step_s.items()},  # per drafted token, by drafter
            "c_of": {name: self.c_of(name) for name in self.draft_step_s},
            "pass_drafts": dict(self.pass_drafts),
            "exit_layer": self.exit_layer,
            "reference_step_ms": {name: ms(s) for name, s in self.reference_step_s.items()},
            "forward": dict(self.forward),
            "verify_relative": list(self.verify_relative),
            "verify_monotone": list(self.verify_monotone),  # what the predictions use (verify_noise says why)
            "implausible": self.implausible,  # why no prediction is built on these timings, or None
        }

    @classmethod
    def from_dict(cls, doc: dict) -> MeasuredCosts:
        """A measurement read back from its JSON: the form to_dict writes, or the earlier one with a key per head
        (each method's `former_cost_keys` in the registry) and, in a model card's measurements.json, only v(K)
        relative to the target step."""
        seconds = lambda value: None if value is None else value / 1e3  # noqa: E731
        target = doc["target_step_ms"] / 1e3
        verify = [v / 1e3 for v in doc["verify_ms"]] if doc.get("verify_ms") else []
        verify = verify or [v * target for v in doc.get("verify_relative") or []]
        steps = {name: v / 1e3 for name, v in (doc.get("step_ms") or {}).items() if v is not None}
        drafts = {name: int(n) for name, n in (doc.get("pass_drafts") or {}).items()}
        reference = {name: v / 1e3 for name, v in (doc.get("reference_step_ms") or {}).items() if v is not None}
        if doc.get("draft_step_ms") is not None:
            steps.setdefault(registry.DRAFT, doc["draft_step_ms"] / 1e3)
        for entry in registry.REGISTRY.values():
            former = dict(entry.former_cost_keys)
            if entry.name in steps or doc.get(former.get("step_ms", "")) is None:
                continue
            n = int(doc.get(former.get("drafts", ""), 1) or 1)  # a pass's time was written whole: share it
            steps[entry.name] = doc[former["step_ms"]] / 1e3 / n
            if n > 1:
                drafts[entry.name] = n
            if doc.get(former.get("reference_ms", "")) is not None:
                reference[entry.name] = doc[former["reference_ms"]] / 1e3
        untrimmed = seconds(doc.get("untrimmed_draft_step_ms"))
        if untrimmed is None and doc.get("draft_vocab") and doc.get("untrimmed_c") is not None:
            untrimmed = doc["untrimmed_c"] * target
        return cls(
            target_name=doc.get("target") or "",
            draft_name=doc.get("draft") or "",
            device=doc.get("device") or "",
            dtype=doc.get("dtype") or "",
            context_tokens=int(doc.get("context_tokens") or 0),
            repeats=int(doc.get("repeats") or 0),
            draft_step_s=steps,
            target_step_s=target,
            verify_s=tuple(verify),
            draft_vocab=int(doc.get("draft_vocab") or 0),
            untrimmed_draft_step_s=untrimmed,
            pass_drafts=drafts,
            exit_layer=int(doc.get("exit_layer") or 0),
            reference_step_s=reference,
            forward=tuple((doc.get("forward") or {}).items()),
        )


@torch.inference_mode()
def measure_costs(
    pair: ModelPair,
    k_max: int = MAX_K,
    repeats: int = 5,
    prompt: str = DEFAULT_PROMPT,
    on_progress: Progress | None = None,
    draft_vocab: int = 0,
    methods: Sequence[str] = (),
    exit_layer: int = 0,
    forward: str = FORWARD_AUTO,
) -> MeasuredCosts:
    """Time a draft step (when the pair has a draft; with the run's draft vocabulary, 0 = all tokens), a target step
    and verify passes for K = 1..k_max (median of `repeats`, after a warm-up); and one draft step of each of
    `methods` whose drafter runs a model of its own (a feature head, early exit at exit_layer): its proposer's cost
    probe. forward: the run setting (auto, lean, hf) each model's timings run under."""
    if not isinstance(k_max, int) or not 1 <= k_max <= MAX_K:
        raise SettingsError(f"the largest K to measure must be from 1 to {MAX_K}; got {k_max!r}.")
    if not isinstance(repeats, int) or not 1 <= repeats <= 50:
        raise SettingsError(f"repeats must be from 1 to 50; got {repeats!r}.")
    ids = pair.tokenizer.encode(prompt) or [next(iter(pair.eos_ids), 0)]
    if pair.context_length:
        ids = ids[: max(1, pair.context_length - k_max - 2)]
    ran = {"target": chosen_forward(forward, pair.target)}
    if pair.draft is not None:
        ran["draft"] = chosen_forward(forward, pair.draft)
    target = _ready(pair.target, pair.vocab_size, ids, forward=ran["target"])
    draft = None
    if pair.draft is not None and pair.crossing is not None:  # a draft with its own tokenizer reads the text its way
        cross = pair.crossing
        draft_ids = cross.draft_ids(cross.target_text(ids)) or [0]
        draft = _ready(pair.draft, cross.intersection.draft_vocab, draft_ids, forward=ran["draft"])
    elif pair.draft is not None:
        draft = _ready(pair.draft, pair.vocab_size, ids, pair.draft_vocab_ids(draft_vocab), ran["draft"])
    drafts = torch.tensor((ids * (k_max // len(ids) + 1))[:k_max], device=pair.device)  # (k_max,) any real tokens

    # One timing of each kind per repeat, interleaved: a slow spell on a shared machine then slows every kind alike
    # instead of skewing one ratio (the target step, say, and with it c and every v(K)).
    calls = {"target": (target, lambda: target.forward(logits_to_keep=1))}
    if draft is not None:
        calls[registry.DRAFT] = (draft, lambda: draft.forward(logits_to_keep=1))
    if draft is not None and draft_vocab:
        whole = _ready(pair.draft, pair.vocab_size, ids, forward=ran["draft"])
        calls["untrimmed"] = (whole, lambda: whole.forward(logits_to_keep=1))
    probes = _probes(pair, ids, methods, exit_layer, ran["target"])
    for name, probe in probes.items():
        calls[name] = (probe, probe.forward)
    references = {name: probe.target_forward for name, probe in probes.items() if _other_forward(probe, ran)}
    for other in sorted(set(references.values())):  # a target step on that forward, for c against it
        reference = _ready(pair.target, pair.vocab_size, ids, forward=other)
        calls[("reference", other)] = (reference, lambda reference=reference: reference.forward(logits_to_keep=1))
    for k in range(1, k_max + 1):
        calls[k] = (target, lambda k=k: target.forward(drafts[:k], logits_to_keep=k + 1))
    times: dict = {name: [] for name in calls}
    for i in range(repeats + 1):  # the first round warms up
        for name, (model, call) in calls.items():
            elapsed = _timed(call, model, pair.device)
            if i:
                times[name].append(elapsed)
        if on_progress:
            on_progress(i + 1, repeats + 1)
    median = {name: max(statistics.median(ts), 1e-9) for name, ts in times.items()}
    steps = {name: median[name] / probe.drafts for name, probe in probes.items()}  # each drafted token's share
    if registry.DRAFT in median:
        steps = {registry.DRAFT: median[registry.DRAFT], **steps}
    return MeasuredCosts(
        target_name=recorded_name(pair.target_name),
        draft_name=recorded_name(pair.draft_name) or "",
        device=str(pair.device),
        dtype=str(pair.dtype).removeprefix("torch."),
        context_tokens=len(ids),
        repeats=repeats,
        draft_step_s=steps,
        target_step_s=median["target"],
        verify_s=tuple(median[k] for k in range(1, k_max + 1)),
        draft_vocab=draft_vocab,
        untrimmed_draft_step_s=median.get("untrimmed"),
        pass_drafts={name: probe.drafts for name, probe in probes.items() if probe.drafts > 1},
        exit_layer=exit_layer if any(registry.get(name).exits_early for name in probes) else 0,
        reference_step_s={name: median[("reference", other)] for name, other in references.items()},
        forward=tuple(ran.items()),
    )


def _probes(pair: ModelPair, ids: list[int], names: Sequence[str], exit_layer: int, forward: str) -> dict:
    """Drafter -> its proposer's cost probe, for each of `names` whose draft step runs a model of its own (the
    draft model is timed anyway where the pair has one; a lookup runs none)."""
    from specviz.core.settings import RunSettings
    from specviz.engine.proposers import proposer_class

    drafters = [registry.get(name).timed_as for name in names]
    wanted = dict.fromkeys(d for d in drafters if d is not None and d != registry.DRAFT)
    made = {}
    for drafter in wanted:
        settings = RunSettings(method=drafter, forward=forward)
        if registry.get(drafter).exits_early:
            if not exit_layer:
                continue  # no exit layer asked: nothing to time at
            settings = RunSettings(method=drafter, forward=forward, exit_layer=exit_layer)
        probe = proposer_class(drafter).cost_probe(pair, ids, settings)
        if probe is not None:  # None: no model of its own drafts (tests/engine/test_method_contract.py)
            made[drafter] = probe
    return made


def _other_forward(probe, ran: dict) -> bool:
    """Whether a probe's c is against a target step on another forward than the one the target was timed on."""
    return probe.target_forward is not None and probe.target_forward != ran["target"]


def timing_options(method: str, exit_layer: int = 0) -> dict:
    """measure_costs' keyword arguments that also time `method`'s draft step (the draft model and a lookup need
    none: the draft model is always timed where the pair has one, a lookup runs no model)."""
    drafter = registry.get(method).timed_as
    if drafter is None or drafter == registry.DRAFT:
        return {}
    return (
        {"methods": (method,), "exit_layer": exit_layer} if registry.get(method).exits_early else {"methods": (method,)}
    )


class _Restorable:
    """A CachedModel after prefill, put back exactly (cache length, pending token) after each timing.

    A step (draft or target) reads the one pending token; a verify pass reads it plus K drafts.
    """

    def __init__(self, state: CachedModel):
        self.state = state
        self.length = state.length
        self.pending = list(state.pending)

    def forward(self, extra: torch.Tensor | None = None, logits_to_keep: int = 1) -> torch.Tensor:
        return self.state.forward(extra, logits_to_keep)

    def restore(self) -> None:
        if self.state.length > self.length:
            self.state.cache.crop(self.length - self.state.length)  # negative: tokens to remove from the end
        self.state.pending, self.state.fed_extra = list(self.pending), 0


def _ready(
    model, vocab_size: int, ids: list[int], vocab_ids: torch.Tensor | None = None, forward: str = FORWARD_HF
) -> _Restorable:
    state = CachedModel(model, vocab_size, ids, vocab_ids, forward=forward)
    state.prefill()  # the cache holds all but the last prompt token; that one is pending
    if state.length == 0:  # a one-token prompt: read it so that every timing runs on top of a cache
        state.forward()
        state.pending = [ids[-1]]
    return _Restorable(state)


def _timed(call: Callable[[], object], model: _Restorable, device: torch.device) -> float:
    """Wall time of one call, the cache restored after it."""
    synchronize(device)
    start = time.perf_counter()
    call()
    synchronize(device)
    elapsed = time.perf_counter() - start
    model.restore()
    return elapsed
