"""The settings of one run, validated at construction so that nothing downstream meets an impossible value."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from specviz import methods
from specviz.core.sampling import SamplingSettings
from specviz.errors import SettingsError

MAX_K = 16


@dataclass(frozen=True)
class RunSettings:
    """Who proposes (method), how many (k), how to sample, how long, and the seed that fixes every random draw."""

    method: str = "draft"  # a method the engine runs (specviz.methods.ENGINE_METHODS): a proposer or "plain"
    k: int = 4
    sampling: SamplingSettings = field(default_factory=SamplingSettings)
    max_new_tokens: int = 64
    seed: int = 0
    ngram_min: int = 1  # n-gram lookup matches the last n tokens, n from ngram_max down to ngram_min
    ngram_max: int = 3
    stop_at_eos: bool = True

    def __post_init__(self) -> None:
        if self.method not in methods.ENGINE_METHODS:
            raise SettingsError(f"method must be one of {', '.join(methods.ENGINE_METHODS)}; got {self.method!r}.")
        _require_int("K (draft length)", self.k, 1, MAX_K)
        _require_int("max new tokens", self.max_new_tokens, 1, 100_000)
        _require_int("seed", self.seed, 0, 2**63 - 1)
        _require_int("n-gram minimum n", self.ngram_min, 1, 32)
        _require_int("n-gram maximum n", self.ngram_max, self.ngram_min, 32)

    @property
    def draft_length(self) -> int:
        """Tokens proposed per round: K, or 0 for plain decoding."""
        return self.k if methods.get(self.method).speculative else 0

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> RunSettings:
        data = dict(data)
        sampling = SamplingSettings(**data.pop("sampling", {}))
        return cls(sampling=sampling, **data)


def _require_int(name: str, value: object, low: int, high: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise SettingsError(f"{name} must be a whole number from {low} to {high}; got {value!r}.")


def check_prompt(prompt: object) -> str:
    """The prompt must be some non-blank text."""
    if not isinstance(prompt, str) or not prompt.strip():
        raise SettingsError("The prompt is empty: type some text for the model to continue.")
    return prompt
