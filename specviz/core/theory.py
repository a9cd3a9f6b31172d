"""The closed forms behind speculative decoding's speedup, as pure functions (Leviathan et al. 2023, section 3).

Names as in `specviz.core.verify`: α acceptance rate, K draft length, c = (one draft step) / (one target step).

    E(α, K)  = (1 − α^(K+1)) / (1 − α) = 1 + α + … + α^K     expected tokens per round (→ K + 1 as α → 1)
    S        = E / (K·c + v(K))                              walltime speedup; v(K) = verify cost / target step
    ops      = (K·ĉ + K + 1) / E                             Leviathan's operations factor (ĉ: draft ops ratio)

The ideal verify cost is v(K) = 1 (a pass over K + 1 tokens costs one target step); a linear model is
v(K) = 1 + β·K; the measured one comes from timing a real pair (`specviz.engine.costs`).

Conventions worked out against Leviathan et al.'s numbers:
- Leviathan's Table 1 (c = 0) is reproduced with ĉ = 0: e.g. α 0.6, K 2 gives ops 3 / 1.96 = 1.53. Here ĉ defaults
  to c (draft arithmetic proportional to draft time), which equals 0 in that table.
- The best K is an integer search over K = 1..k_max (k_max = 16 by default, the engine's limit); as α → 1 with c = 0
  the speedup grows without bound in K, so the search bound is part of the answer.
- A K's break-even α solves S(α, K) = 1, i.e. E(α, K) = K·c + v(K); the break-even α over every K is the smallest of
  those (some K in 1..k_max gives S > 1 above it). With the ideal verify cost it equals c exactly, at K = 1 (K = 1
  gives (1 + α)/(1 + c) > 1 iff α > c, and for α ≤ c every K has Σ_{i≥1} α^i ≤ K·c).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from specviz.errors import SettingsError

MAX_K = 16  # the engine's largest K, and the default bound of the best-K search
SEARCH_LIMIT = 64  # the largest bound a caller may ask the search for
VERIFY_KINDS = ("ideal", "linear", "measured")


def _finite(x: object) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _whole(x: object) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


# ---------------------------------------------------------------------------------------------------------------------
# Closed forms


def expected_tokens(alpha: float, k: int) -> float:
    """E = 1 + α + … + α^K = (1 − α^(K+1)) / (1 − α); exactly K + 1 at α = 1 (summed, so no 0/0 near α = 1)."""
    return math.fsum(alpha**i for i in range(k + 1))


def expected_accepted(alpha: float, k: int) -> float:
    """Accepted drafts per round, α(1 − α^K)/(1 − α) = E − 1: E without the always-emitted correction/bonus token."""
    return expected_tokens(alpha, k) - 1.0


def speedup(alpha: float, k: int, c: float, verify_cost: float = 1.0) -> float:
    """Walltime speedup over plain decoding: E / (K·c + v); v = 1 is the ideal (verify costs one target step)."""
    return expected_tokens(alpha, k) / (k * c + verify_cost)


def ops_factor(alpha: float, k: int, c_hat: float = 0.0) -> float:
    """Arithmetic operations relative to plain decoding: (1 − α)(K·ĉ + K + 1) / (1 − α^(K+1)) = (K·ĉ + K + 1) / E."""
    return (k * c_hat + k + 1) / expected_tokens(alpha, k)


def positional_expected_tokens(alphas: Sequence[float]) -> float:
    """E with a different conditional acceptance rate per position: 1 + Σ_i Π_{j≤i} α_j (K = len(alphas))."""
    total, survive = 1.0, 1.0
    for a in alphas:
        survive *= a
        total += survive
    return total


# ---------------------------------------------------------------------------------------------------------------------
# Verify cost models


@dataclass(frozen=True)
class VerifyCost:
    """v(K): the cost of one verify pass over K drafts (K + 1 tokens), as a multiple of one plain target step.

    kind "ideal": v = 1; "linear": v = 1 + per_token·K; "measured": values[K − 1] for K = 1..len(values).
    """

    kind: str = "ideal"
    per_token: float = 0.0
    values: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in VERIFY_KINDS:
            raise SettingsError(f"verify cost model must be one of {', '.join(VERIFY_KINDS)}; got {self.kind!r}.")
        if not (_finite(self.per_token) and self.per_token >= 0):
            raise SettingsError(f"the linear verify cost per drafted token must be >= 0; got {self.per_token!r}.")
        if self.kind == "measured":
            if not self.values:
                raise SettingsError("a measured verify cost needs at least one measured value (for K = 1).")
            if not all(_finite(v) and v > 0 for v in self.values):
                raise SettingsError(f"measured verify costs must be positive numbers; got {self.values!r}.")

    @classmethod
    def ideal(cls) -> VerifyCost:
        return cls("ideal")

    @classmethod
    def linear(cls, per_token: float) -> VerifyCost:
        return cls("linear", per_token=per_token)

    @classmethod
    def measured(cls, values: Sequence[float]) -> VerifyCost:
        return cls("measured", values=tuple(float(v) for v in values))

    @property
    def k_max(self) -> int:
        """The largest K this model knows v(K) for (a formula knows every K up to the search limit)."""
        return len(self.values) if self.kind == "measured" else SEARCH_LIMIT

    def __call__(self, k: int) -> float:
        if self.kind == "ideal":
            return 1.0
        if self.kind == "linear":
            return 1.0 + self.per_token * k
        if not 1 <= k <= len(self.values):
            raise SettingsError(f"the measured verify cost covers K = 1..{len(self.values)}; K = {k} was asked for.")
        return self.values[k - 1]

    def describe(self) -> str:
        if self.kind == "ideal":
            return "ideal: v(K) = 1 (a verify pass costs one target step)"
        if self.kind == "linear":
            return f"linear: v(K) = 1 + {self.per_token:g}·K"
        return f"measured on this machine for K = 1..{len(self.values)}"


IDEAL = VerifyCost()


# ---------------------------------------------------------------------------------------------------------------------
# Best K and break-even


def best_k(alpha: float, c: float, verify: VerifyCost = IDEAL, k_max: int = MAX_K) -> tuple[int, float]:
    """The integer K in 1..k_max with the largest speedup, and that speedup (the smallest K wins a tie)."""
    k_max = min(k_max, verify.k_max)
    best = max(range(1, k_max + 1), key=lambda k: (speedup(alpha, k, c, verify(k)), -k))
    return best, speedup(alpha, best, c, verify(best))


def break_even_alpha_at(k: int, c: float, verify_cost: float = 1.0, tol: float = 1e-12) -> float | None:
    """The α at which K drafts per round break even, S(α, K) = 1: E(α, K) = K·c + v(K). Above it this K pays.

    0.0 when even α = 0 pays or breaks even (K·c + v ≤ 1); None when not even α = 1 pays (K·c + v ≥ K + 1, the
    most E can be). K = 1 solves 1 + α = c + v directly; a larger K by bisection (E rises with α)."""
    target = k * c + verify_cost  # a round's cost in target steps: E must reach it
    if target <= 1.0:
        return 0.0
    if target >= k + 1:
        return None
    if k == 1:
        return target - 1.0
    low, high = 0.0, 1.0
    while high - low > tol:
        mid = (low + high) / 2
        low, high = (mid, high) if expected_tokens(mid, k) < target else (low, mid)
    return high


def break_even(c: float, verify: VerifyCost = IDEAL, k_max: int = MAX_K) -> tuple[float | None, int | None]:
    """The smallest α at which some K in 1..k_max gives S > 1, and that K (the smallest K of a tie); (None, None) if
    even α = 1 does not pay. Ideal verify cost: exactly (c, 1) for c < 1."""
    if verify.kind == "ideal":
        return (c, 1) if c < 1 else (None, None)
    found = [
        (a, k)
        for k in range(1, min(k_max, verify.k_max) + 1)
        if (a := break_even_alpha_at(k, c, verify(k))) is not None
    ]
    return min(found) if found else (None, None)


def break_even_alpha(c: float, verify: VerifyCost = IDEAL, k_max: int = MAX_K) -> float | None:
    """The smallest α at which some K in 1..k_max gives S > 1; None if even α = 1 does not pay (0.0 if α = 0 does).

    Ideal verify cost: exactly c (K = 1 gives (1 + α)/(1 + c) > 1 iff α > c, and for α ≤ c every K has
    Σ_{i≥1} α^i ≤ K·c). Otherwise the smallest of every K's own break-even α (break_even_alpha_at)."""
    return break_even(c, verify, k_max)[0]


# ---------------------------------------------------------------------------------------------------------------------
# The calculator: validated inputs -> every number the page and the CLI show


@dataclass(frozen=True)
class TheoryInputs:
    """α in [0, 1], K in 1..16, c >= 0, ĉ >= 0 (None = same as c), and the verify cost model."""

    alpha: float
    k: int
    c: float
    c_hat: float | None = None
    verify: VerifyCost = field(default_factory=VerifyCost)
    k_max: int = MAX_K

    def __post_init__(self) -> None:
        if not (_finite(self.alpha) and 0 <= self.alpha <= 1):
            raise SettingsError(f"α (acceptance rate) must be a number from 0 to 1; got {self.alpha!r}.")
        if not _whole(self.k_max) or not 1 <= self.k_max <= SEARCH_LIMIT:
            raise SettingsError(
                f"the largest K searched must be a whole number from 1 to {SEARCH_LIMIT}; got {self.k_max!r}."
            )
        if not _whole(self.k) or not 1 <= self.k <= min(self.k_max, self.verify.k_max):
            top = min(self.k_max, self.verify.k_max)
            raise SettingsError(f"K (draft length) must be a whole number from 1 to {top}; got {self.k!r}.")
        if not (_finite(self.c) and self.c >= 0):
            raise SettingsError(f"c (draft step cost / target step cost) must be a number >= 0; got {self.c!r}.")
        if self.c_hat is not None and not (_finite(self.c_hat) and self.c_hat >= 0):
            raise SettingsError(f"ĉ (draft ops / target ops) must be a number >= 0; got {self.c_hat!r}.")

    @property
    def ops_ratio(self) -> float:
        """ĉ, defaulting to c."""
        return self.c if self.c_hat is None else self.c_hat


@dataclass(frozen=True)
class TheoryResult:
    """What the calculator shows for one set of inputs."""

    inputs: TheoryInputs
    expected_tokens: float  # E
    speedup_ideal: float  # E / (K·c + 1)
    verify_cost: float  # v(K) under the chosen model
    speedup: float  # E / (K·c + v(K))
    ops_factor: float
    best_k: int  # under the chosen verify model
    best_speedup: float
    best_k_ideal: int
    best_speedup_ideal: float
    break_even_alpha: float | None  # under the chosen verify model, the smallest over K = 1..k_max
    break_even_alpha_ideal: float | None
    break_even_k: int | None = None  # the K at which break_even_alpha is reached
    break_even_alpha_at_k: float | None = None  # for the chosen K, under the chosen verify model: S(α, K) = 1
    break_even_alpha_at_k_ideal: float | None = None

    def to_dict(self) -> dict:
        i = self.inputs
        return {
            "alpha": i.alpha,
            "k": i.k,
            "c": i.c,
            "c_hat": i.ops_ratio,
            "verify_model": i.verify.kind,
            "verify_cost": self.verify_cost,
            "expected_tokens": self.expected_tokens,
            "speedup": self.speedup_ideal,
            "speedup_measured": self.speedup,
            "ops_factor": self.ops_factor,
            "best_k": self.best_k_ideal,
            "best_speedup": self.best_speedup_ideal,
            "best_k_measured": self.best_k,
            "best_speedup_measured": self.best_speedup,
            "break_even_alpha": self.break_even_alpha_ideal,
            "break_even_alpha_measured": self.break_even_alpha,
            "break_even_alpha_at_k": self.break_even_alpha_at_k_ideal,
            "break_even_alpha_at_k_measured": self.break_even_alpha_at_k,
        }


def analyse(inputs: TheoryInputs) -> TheoryResult:
    """Every closed-form number for one (α, K, c, ĉ, verify model)."""
    a, k, c, verify = inputs.alpha, inputs.k, inputs.c, inputs.verify
    v = verify(k)
    bk, bs = best_k(a, c, verify, inputs.k_max)
    bki, bsi = best_k(a, c, IDEAL, inputs.k_max)
    be, be_k = break_even(c, verify, inputs.k_max)
    return TheoryResult(
        inputs=inputs,
        expected_tokens=expected_tokens(a, k),
        speedup_ideal=speedup(a, k, c),
        verify_cost=v,
        speedup=speedup(a, k, c, v),
        ops_factor=ops_factor(a, k, inputs.ops_ratio),
        best_k=bk,
        best_speedup=bs,
        best_k_ideal=bki,
        best_speedup_ideal=bsi,
        break_even_alpha=be,
        break_even_alpha_ideal=break_even_alpha(c, IDEAL, inputs.k_max),
        break_even_k=be_k,
        break_even_alpha_at_k=break_even_alpha_at(k, c, v),
        break_even_alpha_at_k_ideal=break_even_alpha_at(k, c),
    )


def formulas(result: TheoryResult) -> dict[str, str]:
    """Each formula with the current numbers substituted (plain text, for the page and the CLI)."""
    i, r = result.inputs, result
    a, k, c, ch = i.alpha, i.k, i.c, i.ops_ratio
    e_text = f"(1 − {a:g}^{k + 1}) / (1 − {a:g})" if a < 1 else "K + 1 (α = 1)"
    be_k = "none: not even α = 1 pays" if r.break_even_alpha_at_k is None else f"α = {r.break_even_alpha_at_k:.3f}"
    if r.break_even_alpha is None:
        be_any = f"none: no K in 1..{i.k_max} pays even at α = 1"
    else:
        at = r.break_even_k
        be_any = (
            f"the smallest is at K = {at}: E(α, {at}) = {at}·{c:g} + {i.verify(at):.3f} → α = {r.break_even_alpha:.3f}"
        )
    return {
        "expected_tokens": f"E = {e_text} = {r.expected_tokens:.3f}",
        "speedup": f"S = E / (K·c + 1) = {r.expected_tokens:.3f} / ({k}·{c:g} + 1) = {r.speedup_ideal:.3f}",
        "speedup_measured": (
            f"S = E / (K·c + v(K)) = {r.expected_tokens:.3f} / ({k}·{c:g} + {r.verify_cost:.3f}) = {r.speedup:.3f}"
        ),
        "ops_factor": (
            f"ops = (K·ĉ + K + 1) / E = ({k}·{ch:g} + {k} + 1) / {r.expected_tokens:.3f} = {r.ops_factor:.3f}"
        ),
        "best_k": f"best K = argmax over K = 1..{i.k_max} of S(K) = {r.best_k} (S = {r.best_speedup:.3f})",
        "break_even_alpha": (
            f"break-even α at K = {k}: E(α, {k}) = K·c + v(K) = {k}·{c:g} + {r.verify_cost:.3f} = "
            f"{k * c + r.verify_cost:.3f} → {be_k}"
        ),
        "break_even_alpha_any_k": f"break-even α over K = 1..{i.k_max}: {be_any}",
    }


# ---------------------------------------------------------------------------------------------------------------------
# Non-uniform acceptance


@dataclass(frozen=True)
class PositionalComparison:
    """E from per-position rates vs the i.i.d. formula at one α: the measured α (accepted / judged, the rates
    weighted by how many drafts reached each position) when the counts are known, else the rates' plain mean."""

    alphas: tuple[float, ...]
    expected_tokens: float  # 1 + Σ_i Π_{j≤i} α_j
    mean_alpha: float
    iid_expected_tokens: float  # E(mean α, K)
    error: float  # iid − positional (positive: the i.i.d. formula is optimistic)
    relative_error: float
    alpha_label: str = "mean of the rates"  # what mean_alpha is


def compare_positional(alphas: Sequence[float], reached: Sequence[int] | None = None) -> PositionalComparison:
    """How far the i.i.d. formula is from E with the per-position rates; with `reached` (drafts that reached each
    position) the i.i.d. formula uses the run's α = accepted / judged, as every other page does."""
    alphas = tuple(float(a) for a in alphas)
    if not alphas or len(alphas) > 64:
        raise SettingsError("give between 1 and 64 per-position acceptance rates.")
    if not all(_finite(a) and 0 <= a <= 1 for a in alphas):
        raise SettingsError(f"every per-position acceptance rate must be from 0 to 1; got {list(alphas)}.")
    exact = positional_expected_tokens(alphas)
    if reached is not None and len(reached) == len(alphas) and sum(reached) > 0:
        mean, label = sum(a * n for a, n in zip(alphas, reached)) / sum(reached), "α = accepted / judged"
    else:
        mean, label = sum(alphas) / len(alphas), "mean of the rates"
    iid = expected_tokens(mean, len(alphas))
    return PositionalComparison(alphas, exact, mean, iid, iid - exact, (iid - exact) / exact, label)


def parse_rates(text: str) -> tuple[float, ...]:
    """'0.9, 0.8 0.7' -> (0.9, 0.8, 0.7); a clear SettingsError for anything else."""
    parts = [p for p in text.replace(",", " ").replace(";", " ").split() if p]
    try:
        rates = tuple(float(p) for p in parts)
    except ValueError as exc:
        raise SettingsError(f"per-position rates must be numbers separated by commas or spaces; got {text!r}.") from exc
    compare_positional(rates)  # validates
    return rates


# ---------------------------------------------------------------------------------------------------------------------
# Leviathan et al.'s Table 1 and worked best-K examples of the closed forms (integer search, ideal verify cost)


LEVIATHAN_TABLE1 = ((0.6, 2), (0.7, 3), (0.8, 2), (0.8, 5), (0.9, 2), (0.9, 10))  # (α, K), c = ĉ = 0
BEST_K_EXAMPLES = ((0.8, 0.05), (0.7, 0.1), (0.6, 0.2), (0.5, 0.5))  # (α, c)


def leviathan_table() -> list[dict]:
    """Table 1 of Leviathan et al. (c = ĉ = 0): α, K, operations factor, speedup."""
    return [
        {"alpha": a, "k": k, "ops": ops_factor(a, k, 0.0), "speedup": speedup(a, k, 0.0)} for a, k in LEVIATHAN_TABLE1
    ]


def best_k_table(k_max: int = MAX_K) -> list[dict]:
    """Best integer K (ideal verify cost) for the worked-example (α, c) pairs."""
    rows = []
    for a, c in BEST_K_EXAMPLES:
        k, s = best_k(a, c, IDEAL, k_max)
        rows.append({"alpha": a, "c": c, "best_k": k, "speedup": s})
    return rows


def expected_tokens_table(k: int = 4, alphas: Sequence[float] = (0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1.0)) -> list[dict]:
    """Expected tokens per round at one K across α (K = 4: at most 5, four drafts plus the bonus)."""
    return [{"alpha": a, "k": k, "expected_tokens": expected_tokens(a, k)} for a in alphas]


@dataclass(frozen=True)
class CostExample:
    """A worked break-even example with costs as a percentage of one plain target step (target step = 100%)."""

    label: str
    alpha: float
    k: int
    draft_pct: float  # one draft step
    verify_pct: float  # one verify pass over the K drafts

    @property
    def expected_tokens(self) -> float:
        return expected_tokens(self.alpha, self.k)

    @property
    def round_pct(self) -> float:
        return self.k * self.draft_pct + self.verify_pct

    @property
    def speedup(self) -> float:
        """(E × 100%) / (K × draft% + verify%)."""
        return self.expected_tokens * 100.0 / self.round_pct


# Illustrative numbers (not measurements), chosen to show three lessons: a cheap, accurate draft gives more than 2x;
# a draft right half the time gives only about 1.2x; doubling K from 4 to 8 gains nothing once the longer verify pass
# is paid for; and an expensive draft throws most of the gain away.
COST_EXAMPLES = (
    CostExample("cheap, accurate draft", 0.8, 4, 5.0, 140.0),
    CostExample("draft right half the time", 0.5, 4, 5.0, 140.0),
    CostExample("same draft, twice as deep", 0.8, 8, 5.0, 165.0),
    CostExample("accurate but expensive draft", 0.8, 4, 30.0, 140.0),
)


def cost_examples_table(examples: Sequence[CostExample] = COST_EXAMPLES) -> list[dict]:
    return [
        {
            "example": e.label,
            "alpha": e.alpha,
            "k": e.k,
            "draft_pct": e.draft_pct,
            "verify_pct": e.verify_pct,
            "round_pct": e.round_pct,
            "expected_tokens": e.expected_tokens,
            "speedup": e.speedup,
        }
        for e in examples
    ]
