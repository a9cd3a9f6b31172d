"""The round page's player bundle built in the lecture hall's pool (specviz.ui.hall), behind the model runs queued
before it, rather than in the session's own thread, where ten sessions building bundles at once share the cores."""

from __future__ import annotations

import hashlib

from specviz.ui.hall import in_the_hall
from specviz.ui.player import cached_packed_bundle


def trace_key(trace_json: str) -> str:
    return hashlib.sha256(trace_json.encode("utf-8")).hexdigest()


def prepared_bundle(trace_json: str, title: str = "", about: str = "", live: bool = False) -> None:
    """A run's player bundle built in the pool (it takes seconds of this process's CPU), so ui.player's cache hands
    it to the page at once; a bundled lecture trace's is read from its prebuilt page and is not queued."""
    in_the_hall(
        "bundle",
        (trace_key(trace_json), title, about, live),
        lambda: cached_packed_bundle(trace_json, title, about, live),
        running="Preparing every step of your run for the browser",
    )
