"""Which model a name or directory holds: two sources are the same model when their config and weights agree.

The workload page uses it to find, for the model a server serves, a pair this app can load (to compare the engines):
with the draft for a draft-model server, with the head beside the target for a feature-head one.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path


def _weights(directory: Path) -> list[tuple[str, int]]:
    """(name, size) of each safetensors file: the weights' identity without reading them."""
    return sorted((f.name, f.stat().st_size) for f in directory.glob("*.safetensors"))


def _config(directory: Path) -> bytes | None:
    """The bytes of config.json, or None when there is none."""
    path = directory / "config.json"
    return path.read_bytes() if path.is_file() else None


def same_model(a: str, b: str) -> bool:
    """The same name, or two directories holding the same model: same config and the same weight files (name and
    size; a copy of the bundled pair elsewhere counts)."""
    if a == b:
        return True
    left, right = Path(a), Path(b)
    if not (left.is_dir() and right.is_dir()):
        return False
    if left.resolve() == right.resolve():
        return True
    return _config(left) is not None and _config(left) == _config(right) and _weights(left) == _weights(right) != []


def local_engine_for(served: str, method: str, candidates: Iterable[tuple[str, str]]) -> tuple[str, str | None] | None:
    """What this app loads to run the served method on the served model: (target, draft) for the draft model (as
    local_pair_for), (target, None) for a feature head when one of its kind sits beside a candidate target that is the
    served model (vLLM does not say which head it runs outside dev mode: the one beside that target); None for any
    other method, or when no candidate has what it needs."""
    from specviz import methods
    from specviz.engine.loading.models import head_beside

    entry = methods.get(method)
    if entry.loads_draft:
        return local_pair_for(served, candidates)
    if not entry.loads_head:
        return None
    for target, _ in candidates:
        if same_model(served, target) and head_beside(target, method):
            return target, None
    return None


def local_pair_for(served: str, candidates: Iterable[tuple[str, str]]) -> tuple[str, str] | None:
    """The first (target, draft) of `candidates` whose target is the served model (and that has a draft); None when
    none is. vLLM does not say which draft it runs (outside dev mode), so the draft is the one that goes with that
    target here."""
    for target, draft in candidates:
        if draft and same_model(served, target):
            return target, draft
    return None
