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
from collections.abc import Callable
from dataclasses import dataclass

import torch

from specviz import methods
from specviz.core.settings import FORWARD_AUTO, FORWARD_HF
from specviz.core.theory import MAX_K, VerifyCost
from specviz.engine.kv import CachedModel
from specviz.engine.lean import chosen_forward
from specviz.engine.models import ModelPair, recorded_name, synchronize
from specviz.errors import SettingsError

NOISE_FACTOR = 1.5  # a pass over fewer tokens timed this many times slower than one over more: noise, not cost
MIN_VERIFY_RELATIVE = 0.9  # a pass over K + 1 tokens reads at least the same weights as a step: below this, noise
# The drafters whose c the calculator measures: the draft model, the feature heads, early exit, and the lookups (c 0).
C_DRAFTERS = (
    methods.DRAFT,
    methods.EAGLE,
    methods.EAGLE3,
    methods.MEDUSA,
    methods.MTP,
    methods.EARLY_EXIT,
    methods.NGRAM,
    methods.SUFFIX,
)
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
    draft_step_s: float | None  # None when the pair has no draft model (an n-gram lookup costs next to nothing)
    target_step_s: float
    verify_s: tuple[float, ...]  # verify_s[K - 1]: one pass over 1 + K tokens
    draft_vocab: int = 0  # the draft vocabulary draft_step_s was timed with (0 = every token)
    untrimmed_draft_step_s: float | None = None  # the whole draft, when draft_step_s is a trimmed one: what Hugging
    #                                              Face's assisted generation pays per draft step
    head_step_s: float | None = None  # one EAGLE-1 head step (its layer + the target's LM head), when timed
    head3_step_s: float | None = None  # one EAGLE-3 head step (its layer + its draft-vocabulary LM head), when timed
    mtp_step_s: float | None = None  # one MTP module step (its block + its norm + the target's LM head), when timed
    medusa_pass_s: float | None = None  # one pass of every Medusa head over one feature (all its drafts), when timed
    medusa_heads: int = 0  # the drafts that pass makes
    exit_layer: int = 0  # the E an early-exit draft step was timed at (0 = not timed)
    exit_step_s: float | None = None  # one early-exit draft step: layers 0..E-1 over one token and the LM head
    exit_target_step_s: float | None = None  # a target step on Hugging Face's forward, which early exit runs, when
    #                                          the other timings ran the lean one: exit_c compares like with like
    forward: tuple[tuple[str, str], ...] = ()  # (model, forward) each timed model ran (engine/lean.py); () = unrecorded

    @property
    def c(self) -> float | None:
        """Draft step cost as a fraction of a target step (None without a draft model)."""
        return None if self.draft_step_s is None else self.draft_step_s / self.target_step_s

    @property
    def head_c(self) -> float | None:
        """An EAGLE-1 head step as a fraction of a target step (None when no head was timed)."""
        return None if self.head_step_s is None else self.head_step_s / self.target_step_s

    @property
    def head3_c(self) -> float | None:
        """An EAGLE-3 head step as a fraction of a target step (None when no head was timed)."""
        return None if self.head3_step_s is None else self.head3_step_s / self.target_step_s

    @property
    def mtp_c(self) -> float | None:
        """An MTP module step as a fraction of a target step (None when none was timed)."""
        return None if self.mtp_step_s is None else self.mtp_step_s / self.target_step_s

    @property
    def medusa_c(self) -> float | None:
        """A Medusa pass per draft it makes (one head: a residual block and an LM head), as a fraction of a target
        step (None when no Medusa heads were timed)."""
        if self.medusa_pass_s is None or not self.medusa_heads:
            return None
        return self.medusa_pass_s / self.medusa_heads / self.target_step_s

    @property
    def exit_c(self) -> float | None:
        """An early-exit draft step as a fraction of a target step (about E/L, plus the LM head's share); None when
        none was timed."""
        return None if self.exit_step_s is None else self.exit_step_s / (self.exit_target_step_s or self.target_step_s)

    def c_of(self, method: str) -> float | None:
        """c of the drafter `method` drafts with (one of C_DRAFTERS): its measured step over a target step, 0 for a
        host lookup (a search over tokens already known runs no model), None when this measurement did not time it."""
        cost = methods.get(method).draft_cost
        if cost == methods.HOST_LOOKUP:
            return 0.0
        if cost == methods.DRAFT_MODEL_STEP:
            return self.c
        if cost == methods.EXIT_LAYERS_STEP:
            return self.exit_c
        heads = {methods.EAGLE: self.head_c, methods.EAGLE3: self.head3_c, methods.MEDUSA: self.medusa_c}
        return (heads | {methods.MTP: self.mtp_c}).get(method)

    def step_s_of(self, method: str) -> float | None:
        """The measured seconds of one draft step of `method` (a Medusa pass's share per draft), None when untimed
        or when it runs no model (a host lookup)."""
        c = self.c_of(method)
        return None if not c else c * self.target_step_s

    @property
    def untrimmed_c(self) -> float | None:
        """c of the whole draft (its full LM head): the same as c unless the draft step was timed trimmed."""
        step = self.untrimmed_draft_step_s if self.draft_vocab else self.draft_step_s
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
        return {
            "target": self.target_name,
            "draft": self.draft_name,
            "device": self.device,
            "dtype": self.dtype,
            "context_tokens": self.context_tokens,
            "repeats": self.repeats,
            "draft_step_ms": None if self.draft_step_s is None else self.draft_step_s * 1e3,
            "target_step_ms": self.target_step_s * 1e3,
            "verify_ms": [v * 1e3 for v in self.verify_s],
            "c": self.c,
            "draft_vocab": self.draft_vocab,
            "untrimmed_c": self.untrimmed_c,
            "head_step_ms": None if self.head_step_s is None else self.head_step_s * 1e3,
            "head_c": self.head_c,
            "head3_step_ms": None if self.head3_step_s is None else self.head3_step_s * 1e3,
            "head3_c": self.head3_c,
            "mtp_step_ms": None if self.mtp_step_s is None else self.mtp_step_s * 1e3,
            "mtp_c": self.mtp_c,
            "medusa_pass_ms": None if self.medusa_pass_s is None else self.medusa_pass_s * 1e3,
            "medusa_heads": self.medusa_heads,
            "medusa_c": self.medusa_c,
            "exit_layer": self.exit_layer,
            "exit_step_ms": None if self.exit_step_s is None else self.exit_step_s * 1e3,
            "exit_target_step_ms": None if self.exit_target_step_s is None else self.exit_target_step_s * 1e3,
            "exit_c": self.exit_c,
            "forward": dict(self.forward),
            "verify_relative": list(self.verify_relative),
            "verify_monotone": list(self.verify_monotone),  # what the predictions use (verify_noise says why)
            "implausible": self.implausible,  # why no prediction is built on these timings, or None
        }


@torch.inference_mode()
def measure_costs(
    pair: ModelPair,
    k_max: int = MAX_K,
    repeats: int = 5,
    prompt: str = DEFAULT_PROMPT,
    on_progress: Progress | None = None,
    draft_vocab: int = 0,
    head: bool = False,
    head3: bool = False,
    medusa: bool = False,
    exit_layer: int = 0,
    mtp: bool = False,
    forward: str = FORWARD_AUTO,
) -> MeasuredCosts:
    """Time a draft step (when the pair has a draft; with the run's draft vocabulary, 0 = all tokens), a target step
    and verify passes for K = 1..k_max (median of `repeats`, after a warm-up); with head=True also a step of the
    pair's EAGLE-1 head, with head3=True one of its EAGLE-3 head, with medusa=True a pass of its Medusa heads, with
    exit_layer=E an early-exit draft step at E (0: none), with mtp=True a step of its MTP module. forward: the run
    setting (auto, lean, hf) each model's timings run under (an early-exit step always runs Hugging Face's: it reads
    its cache objects)."""
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
        draft = _ready(pair.draft, pair.vocab_size, ids, pair.draft_kept(draft_vocab), ran["draft"])
    drafts = torch.tensor((ids * (k_max // len(ids) + 1))[:k_max], device=pair.device)  # (k_max,) any real tokens

    # One timing of each kind per repeat, interleaved: a slow spell on a shared machine then slows every kind alike
    # instead of skewing one ratio (the target step, say, and with it c and every v(K)).
    calls = {"target": (target, lambda: target.forward(logits_to_keep=1))}
    if draft is not None:
        calls["draft"] = (draft, lambda: draft.forward(logits_to_keep=1))
    if draft is not None and draft_vocab:
        whole = _ready(pair.draft, pair.vocab_size, ids, forward=ran["draft"])
        calls["untrimmed"] = (whole, lambda: whole.forward(logits_to_keep=1))
    heads = (("head", head, "EagleProposer"), ("head3", head3, "Eagle3Proposer"), ("mtp", mtp, "MtpProposer"))
    for name, wanted, proposer in heads:
        if wanted:
            step = _HeadStep(pair, ids, proposer, ran["target"])
            calls[name] = (step, step.forward)
    if medusa:
        timed_pass = _MedusaPass(pair, ids, ran["target"])
        calls["medusa"] = (timed_pass, timed_pass.forward)
    if exit_layer:
        exit_step = _ExitStep(pair, ids, exit_layer)
        calls["exit"] = (exit_step, exit_step.forward)
        if ran["target"] != FORWARD_HF:  # early exit runs Hugging Face's forward: its c is against that target step
            hf_target = _ready(pair.target, pair.vocab_size, ids, forward=FORWARD_HF)
            calls["exit_target"] = (hf_target, lambda: hf_target.forward(logits_to_keep=1))
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
    draft_step = median.get("draft")
    target_step = median["target"]
    verify = [median[k] for k in range(1, k_max + 1)]
    return MeasuredCosts(
        target_name=recorded_name(pair.target_name),
        draft_name=recorded_name(pair.draft_name) or "",
        device=str(pair.device),
        dtype=str(pair.dtype).removeprefix("torch."),
        context_tokens=len(ids),
        repeats=repeats,
        draft_step_s=draft_step,
        target_step_s=target_step,
        verify_s=tuple(verify),
        draft_vocab=draft_vocab,
        untrimmed_draft_step_s=median.get("untrimmed"),
        head_step_s=median.get("head"),
        head3_step_s=median.get("head3"),
        mtp_step_s=median.get("mtp"),
        medusa_pass_s=median.get("medusa"),
        medusa_heads=pair.medusa_heads.num_heads if medusa else 0,
        exit_layer=exit_layer if "exit" in median else 0,
        exit_step_s=median.get("exit"),
        exit_target_step_s=median.get("exit_target"),
        forward=tuple(ran.items()),
    )


def timing_options(method: str, exit_layer: int = 0) -> dict:
    """measure_costs' keyword arguments that also time `method`'s draft step (the draft model and a lookup need
    none: the draft model is always timed where the pair has one, a lookup runs no model)."""
    flags = {methods.EAGLE: "head", methods.EAGLE3: "head3", methods.MEDUSA: "medusa", methods.MTP: "mtp"}
    if method in flags:
        return {flags[method]: True}
    if methods.get(method).draft_cost == methods.EXIT_LAYERS_STEP:
        return {"exit_layer": exit_layer}
    return {}


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


class _HeadStep:
    """The pair's feature head (EAGLE-1 or EAGLE-3) after reading the prompt's pairs, as a drafter holds it: one
    timed step reads one drafted pair (its own state back, the next token) and draws its logits; restore crops it."""

    def __init__(self, pair: ModelPair, ids: list[int], proposer: str, forward: str):
        from specviz.core.settings import RunSettings
        from specviz.engine import proposers

        cls = getattr(proposers, proposer)
        made = cls.for_run(pair, RunSettings(method=cls.method, forward=forward))  # the head runs the target's forward
        target = CachedModel(
            pair.target, pair.vocab_size, ids + ids[-1:], hidden_layers=made.hidden_layers, forward=forward
        )
        target.prefill()  # features of every prompt token
        self.drafter = made.start(ids + ids[-1:], target.hidden)
        self.token = torch.tensor(ids[-1:], device=pair.device)

    def forward(self) -> torch.Tensor:
        d = self.drafter
        state = d.proposer.step(self.token, d.last, d.cache)
        d.fed_extra += 1
        return d.proposer.logits(state)

    def restore(self) -> None:
        self.drafter.cache.crop(-self.drafter.fed_extra)
        self.drafter.fed_extra = 0


class _MedusaPass:
    """The pair's Medusa heads over the target's feature of the prompt's last row, as a drafter holds it: one timed
    pass is every head's block and LM head (the drafter's whole proposal); the heads keep no state to restore."""

    def __init__(self, pair: ModelPair, ids: list[int], forward: str):
        from specviz.core.settings import RunSettings
        from specviz.engine.proposers import MedusaProposer

        layers = MedusaProposer.hidden_layers
        target = CachedModel(pair.target, pair.vocab_size, ids + ids[-1:], hidden_layers=layers, forward=forward)
        target.prefill()
        proposer = MedusaProposer.for_run(pair, RunSettings(method=MedusaProposer.method))
        self.drafter = proposer.start(ids + ids[-1:], target.hidden)
        self.k = pair.medusa_heads.num_heads
        self.u = torch.ones(self.k, device=pair.device)

    def forward(self):
        return self.drafter.propose(self.k, self.u)

    def restore(self) -> None:
        pass


class _ExitStep:
    """An early-exit draft over the target's own cache of the prompt, as a drafter holds it: one timed step runs
    one drafted token through layers 0..E-1 (on the cache those layers share with the target) and draws the exit's
    logits; restore crops that token from those layers."""

    def __init__(self, pair: ModelPair, ids: list[int], exit_layer: int):
        from specviz.engine.early_exit import SplitTarget, check_exit_layer

        check_exit_layer(pair.target, exit_layer)
        state = CachedModel(pair.target, pair.vocab_size, ids + ids[-1:])
        state.prefill()  # the prompt in every layer, its last token pending
        self.split = SplitTarget(state, exit_layer)
        self.token = torch.tensor(ids[-1:], device=pair.device)  # (1,)

    def forward(self) -> torch.Tensor:
        return self.split.logits(self.split.lower(self.token))  # (1, V)

    def restore(self) -> None:
        for layer in self.split.state.cache.layers[: self.split.exit_layer]:
            layer.crop(-1)


def _ready(
    model, vocab_size: int, ids: list[int], kept: torch.Tensor | None = None, forward: str = FORWARD_HF
) -> _Restorable:
    state = CachedModel(model, vocab_size, ids, kept, forward=forward)
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
