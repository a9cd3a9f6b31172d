"""Read the Prometheus text format (a server's /metrics page): samples, and sums of a metric over some labels."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})?\s+(\S+)(?:\s+\S+)?\s*$")
_LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*,?')


@dataclass(frozen=True)
class Sample:
    name: str
    labels: tuple[tuple[str, str], ...]
    value: float

    def label(self, key: str, default: str | None = None) -> str | None:
        return dict(self.labels).get(key, default)


def parse(text: str) -> list[Sample]:
    """Every sample line; comments and lines that do not parse are skipped."""
    out = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        match = _SAMPLE.match(line)
        if not match:
            continue
        name, labels, value = match.groups()
        try:
            number = float(value)
        except ValueError:
            continue
        out.append(Sample(name, _labels(labels[1:-1] if labels else ""), number))
    return out


def _labels(text: str) -> tuple[tuple[str, str], ...]:
    pairs, pos = [], 0
    while pos < len(text):
        match = _LABEL.match(text, pos)
        if not match:
            break
        raw = match.group(2)
        pairs.append((match.group(1), raw.replace('\\"', '"').replace("\\n", "\n").replace("\\\\", "\\")))
        pos = match.end()
    return tuple(sorted(pairs))


def total(samples: list[Sample], name: str, **labels: str) -> float | None:
    """Sum of `name` over every label set matching `labels` (e.g. all `engine`s of one model); None when absent."""
    values = [s.value for s in samples if s.name == name and all(s.label(k) == v for k, v in labels.items())]
    values = [v for v in values if not math.isnan(v)]
    return sum(values) if values else None


def by_label(samples: list[Sample], name: str, key: str, **labels: str) -> dict[str, float]:
    """{value of label `key`: sum over the other labels} for `name`, e.g. accepted tokens per draft position."""
    out: dict[str, float] = {}
    for s in samples:
        value = s.label(key)
        if s.name == name and all(s.label(k) == v for k, v in labels.items()) and value is not None:
            out[value] = out.get(value, 0.0) + s.value
    return out


def names(samples: list[Sample]) -> set[str]:
    return {s.name for s in samples}
