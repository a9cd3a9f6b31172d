"""The round page's decisions about which run it shows, without Streamlit: the bundled trace a source names, what a
shared link does to the run shown, and which of the address's keys the in-page player keeps beside its own.

pages/rounds.py and ui/rounds.py draw; these take plain values and are tested in tests/viz/test_rounds_policy.py.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

OPEN_BUNDLED, ASK_LIVE, KEEP = "open bundled", "ask live", "keep"  # what a shared link does to the run shown


def bundled_name(source: str, prefix: str) -> str | None:
    """The bundled trace a run source names ("<prefix><name>"), or None for a live run or an upload."""
    return source.removeprefix(prefix) if source.startswith(prefix) else None


def bundled_info(source: str, traces: Mapping[str, dict], prefix: str) -> dict:
    """The bundled trace's entry (title, what) for a bundled source; {} for any other, or a name no longer bundled."""
    name = bundled_name(source, prefix)
    return traces.get(name, {}) if name is not None else {}


def link_action(link_trace: str | None, traces: Collection[str], source: str, prefix: str) -> str:
    """What a shared link does: open the bundled trace it names, drop a bundled run shown (its settings ask for a live
    run), or keep the run shown."""
    if link_trace in traces:
        return OPEN_BUNDLED
    return ASK_LIVE if bundled_name(source, prefix) is not None else KEEP


def unknown_trace_note(link_trace: str | None, traces: Collection[str], source: str, prefix: str) -> str:
    """What a link naming a bundled trace this app does not have is shown instead, in words ("" for any other
    link): the live run, or the uploaded trace already shown (link_action keeps it)."""
    if link_trace is None or link_trace in traces:
        return ""
    instead = "the uploaded trace already shown" if source == "upload" else "the live run of the sidebar's settings"
    return (
        f"The link asks for the bundled trace {link_trace!r}, which this app does not have (its traces: "
        f"{', '.join(traces)}): showing {instead} instead."
    )


def player_params(params: Mapping[str, str], moment_keys: Collection[str]) -> dict[str, str]:
    """The address's keys that the in-page player keeps as they are: all but the moment and the view, which it
    writes itself as it steps."""
    return {k: v for k, v in params.items() if k not in (*moment_keys, "view", "lecture")}
