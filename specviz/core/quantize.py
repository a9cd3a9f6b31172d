"""The target's own weights at fewer bits, as a draft (ML-SpecQD, arXiv 2503.13565): groupwise weight-only rounding,
written as the pure arithmetic it is. Each group of `group` consecutive input weights of one output row keeps its
minimum and its step, and every weight becomes a whole number of steps above the minimum:

    w ≈ lo + code · step,   code ∈ {0, …, 2^bits − 1},   step = (hi − lo) / (2^bits − 1)

so a group whose weights already sit on such a grid (the Q4_1 blocks smollm2 ships, at 4 bits and groups of 32) is
recovered exactly. The draft differs from the target only in these rounded weights and in its arithmetic (bfloat16
activations), so how close q is to p is a measure of what the rounding lost. No models, no kernels: the engine packs
the codes for torch's kernels (engine/forward/quantized.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from specviz.core.lazy import lazy
from specviz.errors import SettingsError

if TYPE_CHECKING:
    import torch
else:
    torch = lazy("torch")  # the options (in every Settings) are read by commands that never round a weight

BITS = (8, 4, 3, 2)  # weight bits a copy can have (3 and 2 run on the 4-bit kernel with fewer codes)
GROUPS = (32, 64, 128, 256)  # input weights per group (what torch's 4-bit CPU kernel takes)
HEAD_BITS = (16, 8, 4)  # the LM head's precision: 16 = bfloat16, unrounded (the tied head is where 4 bits lose)
DEFAULT_BITS, DEFAULT_GROUP, DEFAULT_HEAD_BITS = 4, 32, 16


@dataclass(frozen=True)
class QuantOptions:
    """The quantized method's options: the layers' bits and group size, and the LM head's precision."""

    bits: int = DEFAULT_BITS
    group: int = DEFAULT_GROUP
    head_bits: int = DEFAULT_HEAD_BITS

    def __post_init__(self) -> None:
        for name, value, allowed in (
            ("bits", self.bits, BITS),
            ("group size", self.group, GROUPS),
            ("head bits", self.head_bits, HEAD_BITS),
        ):
            if isinstance(value, bool) or value not in allowed:
                raise SettingsError(
                    f"The quantized draft's {name} must be one of {', '.join(map(str, allowed))}; got {value!r}."
                )

    @classmethod
    def from_dict(cls, data: dict) -> QuantOptions:
        """The options a trace's JSON holds; unknown keys are refused, naming the known ones."""
        unknown = set(data) - {"bits", "group", "head_bits"}
        if unknown:
            raise SettingsError(f"The quantized draft's options are bits, group and head_bits; got {sorted(data)}.")
        return cls(**data)

    @property
    def label(self) -> str:
        """'4-bit, groups of 32, head unrounded': how messages and traces name the copy."""
        head = "unrounded" if self.head_bits == 16 else f"{self.head_bits}-bit"
        groups = "per output row" if self.bits == 8 else f"groups of {self.group}"
        return f"{self.bits}-bit, {groups}, head {head}"


@dataclass(frozen=True)
class Rounded:
    """A matrix (out, in) rounded groupwise: codes and, per group, its minimum and step."""

    codes: torch.Tensor  # (out, in) int32, each in 0 .. 2^bits - 1
    lo: torch.Tensor  # (out, in / group) float32
    step: torch.Tensor  # (out, in / group) float32
    group: int

    def weights(self) -> torch.Tensor:
        """(out, in) float32: the values the codes stand for."""
        out, width = self.codes.shape
        grouped = self.codes.view(out, width // self.group, self.group).float()
        return (self.lo[..., None] + grouped * self.step[..., None]).view(out, width)


def round_groupwise(weight: torch.Tensor, bits: int, group: int) -> Rounded:
    """weight (out, in), in a multiple of group, rounded to 2^bits levels per group between its least and greatest
    value (asymmetric); a group of one value keeps it exactly (its step is 0)."""
    out, width = weight.shape
    if width % group:
        raise SettingsError(
            f"A {width}-wide matrix does not split into groups of {group}: pick a group size dividing it."
        )
    grouped = weight.detach().float().reshape(out, width // group, group)  # (out, G, group)
    lo, hi = grouped.amin(-1), grouped.amax(-1)  # (out, G)
    levels = 2**bits - 1
    step = (hi - lo) / levels
    safe = torch.where(step > 0, step, torch.ones_like(step))
    codes = ((grouped - lo[..., None]) / safe[..., None]).round().clamp(0, levels).to(torch.int32)
    return Rounded(codes.view(out, width), lo, step, group)


def round_per_row(weight: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """weight (out, in) as int8 codes (out, in) and one scale per row (out,): w ≈ code · scale, symmetric, the layout
    torch's 8-bit kernel reads."""
    w = weight.detach().float()
    scale = w.abs().amax(1) / 127  # (out,)
    safe = torch.where(scale > 0, scale, torch.ones_like(scale))
    return (w / safe[:, None]).round().clamp(-127, 127).to(torch.int8).contiguous(), scale


def padded_to_groups(weight: torch.Tensor, group: int) -> torch.Tensor:
    """weight (out, in) widened to a multiple of group by repeating its last column: the last group's least and
    greatest values stay what they were, so its rounding does too, and the caller feeds zeros to the added columns
    (the toy's 688-wide down projection is 22 groups of 32 less 16)."""
    extra = -weight.shape[1] % group
    return weight if not extra else torch.cat((weight, weight[:, -1:].expand(-1, extra)), dim=1)
