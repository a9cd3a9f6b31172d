"""The round page's link to a bundled lecture's prebuilt static page (viz/lectures.py), when this server serves it."""

from __future__ import annotations

from urllib.parse import urljoin

import streamlit as st

from specviz.core.trace import Trace
from specviz.viz import lectures

LINK_TEXT = "Open this lecture as a static page (no server work per student)"


def static_link(name: str, trace: Trace, info: dict) -> str | None:
    """The Markdown under the trace picker for a bundled lecture: its static page's link and address (the moment it
    opens at included), or why there is none here; None for a name with no prebuilt page."""
    if not (lectures.LECTURES_DIR / lectures.page_file(name)).is_file():
        return None
    if not st.get_option("server.enableStaticServing"):
        return (
            "This server does not serve the prebuilt static pages (server.enableStaticServing is off); the file is "
            f"`static/lectures/{lectures.page_file(name)}` in the repository."
        )
    path = lectures.lecture_url(name, lectures.opening_fragment(trace, info), st.get_option("server.baseUrlPath"))
    here = st.context.url  # the page's address in the browser, when known: hand the class the whole address
    address = urljoin(here, path) if here else path
    return (
        f"[{LINK_TEXT}]({path}): `{address}`. One file with the player inside: each student costs this server one "
        "download of it and no Python run, then steps in the browser with no round trip and no network."
    )
