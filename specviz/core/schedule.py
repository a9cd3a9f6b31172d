"""Adaptive draft length: how many tokens a chain drafter proposes in each round, as pure functions.

Three schedules, named as transformers names them (`generation/candidate_generator.py`, AssistedCandidateGenerator):

- `constant`: K every round (what specviz always did).
- `heuristic`: transformers' `num_assistant_tokens_schedule="heuristic"`. The first round drafts K; after a round in
  which every draft was accepted the next drafts 2 more, after any other round 1 fewer, never fewer than 1
  (`update_candidate_strategy`, called after each verify step). transformers has no ceiling; here a round holds at
  most MAX_K drafts, the one departure (it shows only after six full accepts in a row from K = 4).
- `confidence`: transformers' `assistant_confidence_threshold` (its `ConfidenceCriteria`): K is the cap, and the
  draft stops early after a token whose own draft probability is below the threshold. That token is still proposed
  (the criterion looks at the token just drafted), so every round drafts at least one token. The probability is the
  draft's softmax of its raw logits at the token it chose when greedy (its top probability), and q(x) when sampling,
  as transformers reads its processed scores. With `fitted`, the threshold is refit after every round from the
  (confidence, accepted?) pairs seen so far: the ROC point that minimises FPR + 3·FNR, transformers' own rule (it
  needs scikit-learn for it; `fit_threshold` does it with numpy).

Only K changes from round to round, never how a draft is judged: every schedule is exactly as lossless as the
constant one, and greedy output equals plain decoding token for token under all of them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from specviz.errors import SettingsError

CONSTANT, HEURISTIC, CONFIDENCE = "constant", "heuristic", "confidence"
SCHEDULES = (CONSTANT, HEURISTIC, CONFIDENCE)
FITTED = "fitted"  # --confidence-threshold fitted: refit from the run's own pairs
DEFAULT_THRESHOLD = 0.4  # transformers' default assistant_confidence_threshold
HEURISTIC_UP, HEURISTIC_DOWN = 2, 1  # +2 after a full accept, -1 otherwise (transformers)
FALSE_NEGATIVE_COST = 3  # transformers' ROC rule: cost = FPR + 3 * FNR (a missed accept costs three wasted drafts)
MIN_PAIRS = 5  # transformers refits only with more than 5 pairs, both outcomes among them
ABOVE_ALL = math.nextafter(1.0, 2.0)  # scikit-learn's first ROC threshold is +inf: above every probability, as this
#                                      is, which JSON (and the browser player) can hold

# Why a round's draft stopped where it did (Round.schedule.stop).
STOP_CAP, STOP_CONFIDENCE, STOP_BUDGET, STOP_NONE = "cap", "confidence", "budget", "none"
STOPS = (STOP_CAP, STOP_CONFIDENCE, STOP_BUDGET, STOP_NONE)


def heuristic_next(k: int, drafted: int, accepted: int, ceiling: int) -> int:
    """The next round's K after a round that drafted `drafted` and accepted `accepted` of them: +2 when all were
    accepted, else -1 (never below 1), at most `ceiling`. As transformers, "all" compares with the drafts this round
    actually made, which the token budget may have cut below K."""
    if accepted == drafted:
        return min(ceiling, k + HEURISTIC_UP)
    return max(1, k - HEURISTIC_DOWN)


def pairs_of_round(confidences: tuple[float, ...], accepted: int) -> tuple[tuple[float, bool], ...]:
    """The (confidence, accepted?) pairs a round adds to the fit: each accepted draft, then the first rejected one;
    drafts after the rejection were never judged and add nothing (transformers' matches / probs bookkeeping)."""
    judged = confidences[: accepted + 1]
    return tuple((c, i < accepted) for i, c in enumerate(judged))


def fit_threshold(pairs: tuple[tuple[float, bool], ...], current: float) -> float:
    """The threshold that minimises FPR + 3·FNR over the ROC points of these pairs (a draft counts as "predicted
    accepted" when its confidence is >= the threshold); `current` until there are more than MIN_PAIRS pairs with
    both outcomes among them. Candidate thresholds are ABOVE_ALL (scikit-learn's +inf) then every distinct confidence
    from the highest down, as scikit-learn's roc_curve gives them; on a tie the highest threshold wins (numpy's
    argmin takes the first, as transformers' does)."""
    if len(pairs) <= MIN_PAIRS:
        return current
    scores = np.array([c for c, _ in pairs], dtype=np.float64)
    labels = np.array([a for _, a in pairs], dtype=bool)
    positives, negatives = int(labels.sum()), int((~labels).sum())
    if positives == 0 or negatives == 0:
        return current
    thresholds = np.concatenate([[ABOVE_ALL], np.unique(scores)[::-1]])  # (T,) highest first
    predicted = scores[None, :] >= thresholds[:, None]  # (T, pairs)
    tpr = (predicted & labels).sum(1) / positives
    fpr = (predicted & ~labels).sum(1) / negatives
    costs = fpr + FALSE_NEGATIVE_COST * (1 - tpr)
    return float(thresholds[int(np.argmin(costs))])


def stop_reason(k: int, depth: int, drafted: int) -> str:
    """Why a round drafted `drafted` tokens when the schedule allowed `k` and the token budget `depth` (<= k)."""
    if depth < 1:
        return STOP_BUDGET if k >= 1 else STOP_NONE
    if drafted == 0:
        return STOP_NONE  # the drafter had nothing to propose (e.g. no target feature yet)
    if drafted < depth:
        return STOP_CONFIDENCE
    return STOP_BUDGET if depth < k else STOP_CAP


@dataclass(frozen=True)
class ScheduleStep:
    """What the schedule did in one round: the K it allowed, why the draft stopped, and what the next round gets.

    confidences: the draft's probability of each token it drafted (confidence schedule only; empty otherwise);
    threshold: the threshold in force this round (None unless confidence); next_k / next_threshold: the values after
    this round's update (the heuristic's K, the fitted threshold)."""

    k: int
    stop: str
    next_k: int
    confidences: tuple[float, ...] = ()
    threshold: float | None = None
    next_threshold: float | None = None


@dataclass(frozen=True)
class ScheduleState:
    """The schedule between rounds: the K the next round may draft and, for confidence, the threshold and the pairs
    it is fitted from. `after` returns the state for the next round; nothing is mutated."""

    name: str
    k: int
    ceiling: int
    threshold: float | None = None
    fitted: bool = False
    pairs: tuple[tuple[float, bool], ...] = field(default=(), repr=False)

    @classmethod
    def start(cls, name: str, k: int, ceiling: int, threshold: float, fitted: bool) -> ScheduleState:
        if name != CONFIDENCE:
            return cls(name, k, ceiling)
        return cls(name, k, ceiling, threshold, fitted)

    @property
    def stop_below(self) -> float | None:
        """The confidence under which the drafter stops this round (None: it drafts the full depth)."""
        return self.threshold if self.name == CONFIDENCE else None

    def after(self, depth: int, drafted: int, accepted: int, confidences: tuple[float, ...]) -> ScheduleStep:
        """This round's step record: it drafted `drafted` of a possible `depth` and `accepted` were accepted."""
        nxt = self.next_state(drafted, accepted, confidences)
        return ScheduleStep(
            k=self.k,
            stop=stop_reason(self.k, depth, drafted),
            next_k=nxt.k,
            confidences=tuple(confidences) if self.name == CONFIDENCE else (),
            threshold=self.threshold,
            next_threshold=nxt.threshold,
        )

    def next_state(self, drafted: int, accepted: int, confidences: tuple[float, ...]) -> ScheduleState:
        if self.name == HEURISTIC:
            return ScheduleState(self.name, heuristic_next(self.k, drafted, accepted, self.ceiling), self.ceiling)
        if self.name == CONFIDENCE and self.fitted:
            pairs = self.pairs + pairs_of_round(tuple(confidences), accepted)
            threshold = fit_threshold(pairs, self.threshold)
            return ScheduleState(self.name, self.k, self.ceiling, threshold, True, pairs)
        return self


def label(settings) -> str:
    """'constant', 'heuristic', 'confidence 0.4' or 'confidence fitted': a run's schedule (RunSettings) in words."""
    if settings.k_schedule != CONFIDENCE:
        return settings.k_schedule
    return f"{CONFIDENCE} {FITTED if settings.fit_threshold else format(settings.confidence_threshold, 'g')}"


def parse_threshold(text: str) -> tuple[float, bool]:
    """'0.4' -> (0.4, False); 'fitted' -> (DEFAULT_THRESHOLD, True): the fit starts from transformers' default."""
    value = str(text).strip().lower()
    if value == FITTED:
        return DEFAULT_THRESHOLD, True
    try:
        return float(value), False
    except ValueError:
        raise SettingsError(
            f"The confidence threshold is a probability from 0 to 1 (e.g. 0.4) or {FITTED!r}; got {text!r}."
        ) from None
