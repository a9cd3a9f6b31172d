"""What a server sends, checked where it enters: shapes, types and bounds, before any of it is used.

A listed server is still someone else's program: its JSON may be a list where an object belongs, a string where a
count belongs, or a count far beyond what was asked for (a record built from `completion_tokens = 1e12` would need
terabytes). Each check here either returns the value in the type the client uses or raises MalformedAnswer naming
the field, what came and what a vLLM server sends instead. No count is trusted beyond what the request allows: a
completion has at most max_tokens tokens, so at most that many verify steps, each of at most MAX_SERVER_K drafts.
"""

from __future__ import annotations

import math
import reprlib
from dataclasses import dataclass

from specviz.remote.errors import MalformedAnswer

# The largest K (drafts per verify step) specviz takes from a server. vLLM itself accepts any
# num_speculative_tokens, but past a few dozen every step's drafts are almost all rejected (a draft must match the
# target that many times in a row), so no deployment runs there; 64 is four times specviz's own MAX_K (16) and leaves
# room for tree-shaped methods that verify more nodes. A larger K is a broken or hostile server, refused at connect.
MAX_SERVER_K = 64

_SHOWN = reprlib.Repr()
_SHOWN.maxstring, _SHOWN.maxother, _SHOWN.maxlist, _SHOWN.maxdict = 60, 60, 6, 4


def shown(value) -> str:
    """A server's value as a message may quote it: short (a few items of a list, 60 characters of a string)."""
    return _SHOWN.repr(value)


def bad(where: str, field: str, value, expected: str) -> MalformedAnswer:
    """The error for `field` of the answer from `where` holding `value` where a vLLM server sends `expected`."""
    return MalformedAnswer(
        f"{where} sent {field} = {shown(value)}, where a vLLM server sends {expected}. specviz cannot measure with "
        "this answer: check that the URL is a vLLM server's (and that no proxy rewrites its answers); if it is, "
        "report its version, and restart it if it misbehaves."
    )


def whole(value, where: str, field: str, low: int = 0, high: int | None = None) -> int:
    """A count: an integer (an integral float too), low <= value <= high; else MalformedAnswer."""
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool) and value >= low and (high is None or value <= high):
        return value
    span = f"from {low}" + ("" if high is None else f" to {high}")
    raise bad(where, field, value, f"a whole number {span}")


def optional_whole(doc: dict, names: tuple[str, ...], where: str, low: int = 0, high: int | None = None) -> int | None:
    """The first of `names` present in `doc`, checked as a count; None when none is."""
    name = present(doc, names)
    return None if name is None else whole(doc[name], where, name, low, high)


def wholes(value, where: str, field: str, high: int, max_len: int) -> tuple[int, ...]:
    """A list of at most max_len counts, each from 0 to high."""
    if not isinstance(value, list) or len(value) > max_len:
        raise bad(where, field, value, f"a list of at most {max_len} whole numbers")
    return tuple(whole(v, where, f"{field}[{i}]", 0, high) for i, v in enumerate(value))


def present(doc: dict, names: tuple[str, ...]) -> str | None:
    """The first of `names` that `doc` holds, not null."""
    return next((name for name in names if doc.get(name) is not None), None)


def text_or_none(value, where: str, field: str) -> str | None:
    """A string, or None for a null or absent one."""
    if value is None or isinstance(value, str):
        return value
    raise bad(where, field, value, "a string")


# -------------------------------------------------------------------------------------------------------- completion
@dataclass(frozen=True)
class Completion:
    """One /v1/completions answer, checked: its first choice's text and token ids, and its metrics block."""

    text: str
    ids: tuple[int, ...]
    n_tokens: int  # usage.completion_tokens, at most the max_tokens asked for
    finish_reason: str | None
    spec: dict | None  # the speculative-decoding block as sent (read with spec_metrics)


def completion(doc, where: str, max_tokens: int, spec_names: tuple[str, ...]) -> Completion:
    """A completion answer -> Completion; MalformedAnswer for any field of the wrong shape, or more tokens than
    max_tokens (a server's count is never trusted beyond what was asked for)."""
    if not isinstance(doc, dict):
        raise bad(where, "its answer", doc, "a JSON object with a list of choices")
    choices = doc.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise bad(where, "choices", choices, "a non-empty list of completion objects")
    choice = choices[0]
    ids = _token_ids(choice.get("token_ids"), where, max_tokens)
    usage = doc.get("usage")
    if usage is not None and not isinstance(usage, dict):
        raise bad(where, "usage", usage, "an object with completion_tokens")
    count = (usage or {}).get("completion_tokens")
    n_tokens = len(ids) if count is None else _token_count(count, where, max_tokens)
    return Completion(
        text_or_none(choice.get("text"), where, "choices[0].text") or "",
        ids,
        n_tokens,
        text_or_none(choice.get("finish_reason"), where, "choices[0].finish_reason"),
        _spec_block(doc, choice, where, spec_names),
    )


def _token_ids(value, where: str, max_tokens: int) -> tuple[int, ...]:
    """choices[0].token_ids: at most max_tokens non-negative integers (absent: none)."""
    if value is None:
        return ()
    return wholes(value, where, "choices[0].token_ids", 2**31 - 1, max_tokens)


def _token_count(value, where: str, max_tokens: int) -> int:
    """usage.completion_tokens: a whole number from 0 to the max_tokens the request asked for."""
    count = whole(value, where, "usage.completion_tokens", 0)
    if count > max_tokens:
        raise MalformedAnswer(
            f"{where} sent usage.completion_tokens = {shown(value)}, but the request asked for at most {max_tokens} "
            "tokens: a vLLM server never sends more, so specviz does not believe it. Check that the URL is a vLLM "
            "server's, and restart it if it misbehaves."
        )
    return count


def _spec_block(doc: dict, choice: dict, where: str, names: tuple[str, ...]) -> dict | None:
    """The speculative-decoding metrics: under the answer's or the choice's `metrics`, or at the top level."""
    for holder in (doc.get("metrics"), choice.get("metrics"), doc):
        name = present(holder, names) if isinstance(holder, dict) else None
        if name is not None and not isinstance(holder[name], dict):
            raise bad(where, name, holder[name], "an object of speculative-decoding counts")
        if name is not None:
            return holder[name]
    return None


# ----------------------------------------------------------------------------------------------- speculative metrics
@dataclass(frozen=True)
class SpecMetrics:
    """A completion's speculative-decoding block, checked: each count within what max_tokens and K allow."""

    k: int | None
    steps: int | None  # verify steps (vLLM's num_spec_steps / num_drafts)
    accepted: int | None
    draft_tokens: int | None
    histogram: tuple[int, ...] | None  # steps by how many drafts they accepted, 0..K
    per_step_accepted: tuple[int, ...] | None
    per_step_drafted: tuple[int, ...] | None


@dataclass(frozen=True)
class SpecFields:
    """The names each field goes by across vLLM versions (the client's F_* tuples)."""

    k: tuple[str, ...]
    steps: tuple[str, ...]
    accepted: tuple[str, ...]
    draft_tokens: tuple[str, ...]
    histogram: tuple[str, ...]
    per_step_accepted: tuple[str, ...]
    per_step_drafted: tuple[str, ...]


def spec_metrics(block: dict, where: str, max_tokens: int, names: SpecFields) -> SpecMetrics:
    """A speculative-decoding block -> SpecMetrics: at most max_tokens steps (each commits a token), at most
    MAX_SERVER_K drafts a step, per-step lists of one length with no step accepting more than it drafted."""
    drafts = max_tokens * MAX_SERVER_K
    metrics = SpecMetrics(
        k=optional_whole(block, names.k, where, 1, MAX_SERVER_K),
        steps=optional_whole(block, names.steps, where, 0, max_tokens),
        accepted=optional_whole(block, names.accepted, where, 0, drafts),
        draft_tokens=optional_whole(block, names.draft_tokens, where, 0, drafts),
        histogram=_optional_wholes(block, names.histogram, where, max_tokens, MAX_SERVER_K + 1),
        per_step_accepted=_optional_wholes(block, names.per_step_accepted, where, MAX_SERVER_K, max_tokens),
        per_step_drafted=_optional_wholes(block, names.per_step_drafted, where, MAX_SERVER_K, max_tokens),
    )
    _check_steps(metrics, where)
    return metrics


def _optional_wholes(doc: dict, names: tuple[str, ...], where: str, high: int, max_len: int) -> tuple[int, ...] | None:
    """The first of `names` present in `doc`, checked as a list of counts; None when none is."""
    name = present(doc, names)
    return None if name is None else wholes(doc[name], where, name, high, max_len)


def _check_steps(metrics: SpecMetrics, where: str) -> None:
    """Per-step lists that describe the same steps: equally long, and no step accepting more than it drafted."""
    accepted, drafted = metrics.per_step_accepted, metrics.per_step_drafted
    if accepted is None or drafted is None:
        return
    if len(accepted) != len(drafted):
        raise bad(where, "per_step_accepted and per_step_drafted", (len(accepted), len(drafted)), "lists of one length")
    over = next((i for i, (a, d) in enumerate(zip(accepted, drafted)) if a > d), None)
    if over is not None:
        raise bad(where, f"per_step_accepted[{over}]", accepted[over], f"at most the {drafted[over]} drafted there")
