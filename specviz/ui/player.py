"""The round page's in-page player: a Streamlit Components v2 component that steps through a trace's player bundle in
the browser, with no Python per step.

The component only loads and starts the one player (static/js/specviz-player.js, the offline export's too) with the
vendored Vega builds, from Streamlit's static serving (static/js/, once per browser: ETags). Its `data` is the run's
bundle gzipped and base64-encoded (cached per trace for every session, 20-110 kB where the JSON is 0.5-1.6 MB; a rerun
that sends the same element again costs a reference, as Streamlit caches large messages in the browser), the step
to start at, the starting view and the page's other URL parameters. It never sends a value back, so stepping starts
no rerun. Components v2 calls the module again whenever `data` changes (and keeps only the last cleanup), so the
module keeps its player on its element and starts a new one only for another bundle or start (another view, e.g.
the sidebar's lecture mode, switches the running player's view at the moment it shows).
"""

from __future__ import annotations

import hashlib
import os

import streamlit as st

from specviz.core.trace_json import trace_from_json
from specviz.ui.render import cached_player_bundle
from specviz.viz.export_html import packed, player_css
from specviz.viz.lectures import prebuilt_packed

NAME = "specviz_player"
BROWSER_STEPPING = "browser_stepping"  # session key of the round page's "Step in the browser" toggle
STEPPING_ENV = "SPECVIZ_STEPPING"  # "server": the toggle starts off (AppTests, which run no JavaScript; old browsers)

JS = r"""
const FILES = [["vega", "vega.min.js"], ["vegaLite", "vega-lite.min.js"], ["vegaEmbed", "vega-embed.min.js"],
  ["SpecvizPlayer", "specviz-player.js"]];

// Where Streamlit serves static/: beside its own scripts (<base>/static/js/index.*.js -> <base>/app/static/js/), so a
// base URL path or a proxy's prefix is followed; the page's folder if that script is not found.
function staticBase() {
  const own = document.querySelector('script[src*="/static/js/index."]');
  if (own) return new URL("../../app/static/js/", own.src).href;
  return new URL("app/static/js/", location.origin + location.pathname.replace(/[^/]*$/, "")).href;
}

// Each library once per page (a global already there, or a load in flight, is not loaded again).
function loadScripts() {
  if (window.__specvizLoading) return window.__specvizLoading;
  const base = staticBase();
  window.__specvizLoading = FILES.reduce((ready, [global, file]) => ready.then(() => {
    if (window[global]) return null;
    return new Promise((resolve, reject) => {
      const tag = document.createElement("script");
      tag.src = base + file;
      tag.dataset.specviz = file;
      tag.onload = resolve;
      tag.onerror = () => reject(new Error("could not load " + tag.src));
      document.head.appendChild(tag);
    });
  }), Promise.resolve());
  window.__specvizLoading.catch(() => { window.__specvizLoading = null; }); // a later mount tries again
  return window.__specvizLoading;
}

export default function (component) {
  const { data, parentElement } = component;
  let root = parentElement.querySelector(".spz-mount");
  if (!root) { root = document.createElement("div"); root.className = "spz-mount"; parentElement.appendChild(root); }
  if (!root.__spzFocusWatch) { // the page follows the focus view in CSS (pages/rounds.py): turned on, the phase
    let was = false;             // comes to the top of the screen, however far down the page was scrolled
    root.__spzFocusWatch = new MutationObserver(() => {
      const now = root.classList.contains("spz-focus");
      if (now && !was) root.scrollIntoView({block: "start"});
      was = now;
    });
    root.__spzFocusWatch.observe(root, {attributes: true, attributeFilter: ["class"]});
  }
  const want = data.key + ":" + data.start;
  // Streamlit may also mount the element afresh (an element drawn above it shifts it): the moment the viewer was at
  // is kept on the page for the same run and start, so a rerun never sends the viewer back.
  const cleanup = () => {
    const was = root.__spz;
    if (was && was.player) { window.__specvizLast = {want: was.want, at: was.player.at()}; was.player.destroy(); }
    root.__spz = null;
  };
  if (root.__spz && root.__spz.want === want) { // the same run and start: keep the viewer's moment, take the view
    const same = root.__spz, view = data.lecture + ":" + data.focus;
    if (same.player && same.view !== view) same.player.view(data.lecture, data.focus);
    same.view = view;
    return cleanup;
  }
  cleanup();
  const mine = (root.__spz = {want, player: null, view: data.lecture + ":" + data.focus});
  root.dataset.key = data.key;
  (async () => {
    try {
      await loadScripts();
      const doc = await window.SpecvizPlayer.unpack(data.bundle);
      if (root.__spz !== mine) return; // another run arrived while this one unpacked
      const last = window.__specvizLast;
      mine.player = window.SpecvizPlayer.mount(root, doc, {
        start: last && last.want === want ? last.at : data.start,
        lecture: data.lecture, focus: data.focus, moment: "query", params: data.params,
        copyLinks: true, speed: data.speed,
      });
    } catch (e) {
      root.textContent = "The in-page player could not start (" + e + "): turn off 'Step in the browser' above " +
        "to step on the server.";
      root.classList.add("spz-problem");
    }
  })();
  return cleanup;
}
"""


@st.cache_data(show_spinner="Preparing every step of this run for the browser (once per run)…", max_entries=16)
def cached_packed_bundle(trace_json: str, title: str = "", about: str = "", live: bool = False) -> tuple[str, str]:
    """A run's bundle as the component's data -> (gzip + base64 text, its short hash), cached for every session; a
    bundled lecture's is read from its prebuilt static page (milliseconds, where building it takes seconds); live:
    the round page's own run, whose times are this machine's."""
    text = (None if live else prebuilt_packed(trace_from_json(trace_json), title, about)) or packed(
        cached_player_bundle(trace_json, title, about, live)
    )
    return text, hashlib.sha256(text.encode("ascii")).hexdigest()[:16]


@st.cache_resource
def player_component():
    """The component, registered once per server (a second registration under the name only logs a warning)."""
    return st.components.v2.component(NAME, html="", css=player_css(), js=JS, isolate_styles=False)


def browser_stepping_default() -> bool:
    """Whether the round page steps in the browser unless the viewer says otherwise (SPECVIZ_STEPPING=server: no)."""
    return os.environ.get(STEPPING_ENV, "browser").strip().lower() != "server"


def player_data(
    trace_json: str,
    start: int,
    lecture: bool,
    focus: bool,
    params: dict[str, str],
    title: str = "",
    about: str = "",
    live: bool = False,
) -> dict:
    """What the component is given: the packed bundle and its key, the start step, the view, the page's parameters.
    live: a run just made here (its times are this machine's)."""
    bundle, key = cached_packed_bundle(trace_json, title, about, live)
    return {
        "bundle": bundle,
        "key": key,
        "start": start,
        "lecture": lecture,
        "focus": focus,
        "params": params,
        "speed": 1.0,
    }


def show_player(data: dict, key: str = "rounds_player") -> None:
    """Mount the player (once per session: later reruns with the same data leave it stepping where it is)."""
    player_component()(data=data, key=key, width="stretch")
