"""The round page's URL: settings, prompt (or a bundled trace's name) and the moment shown, both ways.

A copied address bar opens exactly the view it was copied from: `page_params` writes it from what is shown,
`read_url` reads a shared link back, and `apply_url` hands what it read to the sidebar as if the user had chosen it
(the sidebar's own widgets then check the ranges, as for a typed value). Both directions are pure except the last
two functions, which read and write Streamlit's query parameters and session state.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

import streamlit as st

from specviz import methods
from specviz.core.sampling import SamplingSettings
from specviz.core.settings import RunSettings, parse_tree_spec, tree_fields
from specviz.core.trace import Trace
from specviz.core.verify import TOKEN
from specviz.engine.loading.catalogue import CATALOGUE, PAIR_NAMES
from specviz.engine.loading.models import recorded_name
from specviz.ui.controls import HEAD_TREE, active_sources, set_setting, set_tree_shape, target_layers
from specviz.ui.limits import Limits
from specviz.viz import steps
from specviz.viz.steps import query_string  # the address bar's codec, pure: the player bundle writes it too

URL_SETTINGS = {  # URL parameter -> (sidebar key, type)
    "method": ("method", str),
    "k": ("k", int),
    "t": ("temperature", float),
    "top_k": ("top_k", int),
    "top_p": ("top_p", float),
    "seed": ("seed", int),
    "n": ("max_new_tokens", int),
    "dv": ("draft_vocab", int),
    "ee": ("exit_layer", int),  # early exit's E (only an early-exit run's link carries it)
    "qb": ("quant_bits", int),  # the quantized self-draft's bits (only its runs' links carry it)
    "vf": ("verifier", str),  # block verification (only its runs' links carry it: token by token is the default)
}
MOMENT_KEYS = ("round", "phase", "pos")
PRESENT = "present"  # present=1: open as a presenter wants it (OpenedUrl.present); never written back
VIEW_KEYS = (*MOMENT_KEYS, "view", "lecture", PRESENT)  # what the in-page player writes (or drops) in the browser
BUNDLED = "bundled:"  # a trace source "bundled:<name>" replays the bundled trace of that name


def settings_params(settings: RunSettings, prompt: str) -> dict[str, str]:
    """A live run's settings and prompt as URL parameters (a tree run adds its shape: tree=2,2,1,1)."""
    sampling = settings.sampling
    params = {
        "method": settings.method,
        "k": str(settings.k),
        "t": f"{sampling.temperature:g}",
        "top_k": str(sampling.top_k),
        "top_p": f"{sampling.top_p:g}",
        "seed": str(settings.seed),
        "n": str(settings.max_new_tokens),
        "dv": str(settings.draft_vocab),
        "prompt": prompt,
    }
    if settings.tree or settings.dynamic:
        params["tree"] = settings.tree_label  # 2,2,1,1 or dynamic:16,5,4
    if methods.get(settings.method).exits_early:
        params["ee"] = str(settings.exit_layer)
    if methods.get(settings.method).quantizes:
        params["qb"] = str(settings.quant.bits)
    if settings.verifier != TOKEN:
        params["vf"] = settings.verifier
    return params


def presenter_params(params: dict[str, str]) -> dict[str, str]:
    """A view's address as a presenter's link: the same moment, opened full screen on the phase (present=1)."""
    return {**params, PRESENT: "1"}


def page_params(trace: Trace, cursor: steps.Cursor, source: str, focus: bool, lecture: bool) -> dict[str, str]:
    """The whole address of the view shown: the moment, the view, lecture mode, and what is replayed (a bundled
    trace by name, a live run by its settings and prompt; an uploaded trace cannot be named)."""
    params = steps.url_params(trace, cursor)
    params["view"] = "focus" if focus else "full"
    if lecture:
        params["lecture"] = "1"
    if source.startswith(BUNDLED):
        params["trace"] = source.removeprefix(BUNDLED)
    elif source == "live":
        params |= settings_params(trace.settings, trace.prompt)
        params |= {"pair": pair_name(str(trace.meta.get("target", ""))), "dtype": str(trace.meta.get("dtype", ""))}
    return params


def pair_name(target: str) -> str:
    """A run's pair as a link names it: the catalogue pair's name (pystdlib, smollm2) for its target, as records name
    it (a path for any other target)."""
    return next((spec.key for spec in CATALOGUE if recorded_name(spec.target_source) == recorded_name(target)), target)


@dataclass(frozen=True)
class OpenedUrl:
    """What a shared link asks for. Settings whose text does not parse are left out (the sidebar keeps its own)."""

    sidebar: dict[str, object] = field(default_factory=dict)  # sidebar key -> value (URL_SETTINGS)
    tree: str | None = None  # the tree shape as typed, e.g. "2,2,1,1"
    lecture: bool = False  # only ever turns lecture mode on
    present: bool = False  # a presenter's link (present=1): lecture mode, the focus view, the sidebar collapsed
    focus: bool | None = None  # the focus view (True), the full one (False), or as it was (None)
    prompt: str | None = None
    trace: str | None = None  # a bundled trace's name
    pair: str | None = None  # the target the linked run used (as records name it) and its precision: a link cannot
    dtype: str | None = None  # load a pair, so a different one in the sidebar is said
    moment: dict[str, str] = field(default_factory=dict)  # round, phase, pos as given
    unreadable: tuple[str, ...] = ()  # parameters whose text is not a value of their kind, e.g. "k='abc'"

    def run_settings(self, base: RunSettings) -> RunSettings:
        """The settings the link names, `base` for what it does not carry (the draft vocabulary, n-gram sizes)."""
        values, sampling = self.sidebar, base.sampling
        spec = parse_tree_spec(self.tree) if self.tree else ()
        fields = tree_fields(spec) if spec else {"tree": (), "dynamic": None, "k": values.get("k", base.k)}
        return replace(
            base,
            **fields,  # a tree's K is its depth, as the sidebar sets it
            method=values.get("method", base.method),
            sampling=SamplingSettings(
                values.get("temperature", sampling.temperature),
                values.get("top_k", sampling.top_k),
                values.get("top_p", sampling.top_p),
            ),
            seed=values.get("seed", base.seed),
            max_new_tokens=values.get("max_new_tokens", base.max_new_tokens),
            draft_vocab=values.get("draft_vocab", base.draft_vocab),
            exit_layer=values.get("exit_layer", base.exit_layer),
            quant=replace(base.quant, bits=values.get("quant_bits", base.quant.bits)),
            verifier=TOKEN if spec else values.get("verifier", base.verifier),
        )


def read_url(params: Mapping[str, str]) -> OpenedUrl:
    """A link's parameters read back; unreadable numbers are dropped, as a typed value the sidebar cannot take."""
    sidebar, unreadable = {}, []
    for name, (key, kind) in URL_SETTINGS.items():
        if name in params:
            try:
                sidebar[key] = kind(params[name])
            except ValueError:
                unreadable.append(f"{name}={params[name]!r}")
    view = params.get("view")
    present = params.get(PRESENT) in ("1", "true")
    return OpenedUrl(
        sidebar=sidebar,
        tree=params.get("tree"),
        lecture=params.get("lecture") in ("1", "true") or present,
        present=present,
        focus=True if present else view == "focus" if view in ("focus", "full") else None,
        prompt=params.get("prompt"),
        trace=params.get("trace"),
        pair=params.get("pair"),
        dtype=params.get("dtype"),
        moment={k: params[k] for k in MOMENT_KEYS if k in params},
        unreadable=tuple(unreadable),
    )


# ---- Streamlit's side: the address bar and the session ----------------------------------------------------------
WRITTEN = "_rounds_url"  # session key: the parameters this page last wrote


def url_now() -> dict[str, str]:
    """The address bar's parameters."""
    return {k: st.query_params[k] for k in st.query_params}


def replayed(params: Mapping[str, str]) -> dict[str, str]:
    """An address's parameters less the moment and the view: what it replays (a bundled trace's name, or a live run's
    settings and prompt). The in-page player rewrites the rest in the browser as it steps, which the server never
    hears of, so the page knows its own address by this part."""
    return {k: v for k, v in params.items() if k not in VIEW_KEYS}


def opened_url() -> OpenedUrl | None:
    """A link the page did not write itself (shared, or typed in), read; None for the page's own URL or none. The
    page's own URL is known by what it replays: the in-page player moves its moment and view without a rerun."""
    params, written = url_now(), st.session_state.get(WRITTEN)
    if not params or (written is not None and replayed(params) == replayed(written)):
        return None
    return read_url(params)


def apply_url(opened: OpenedUrl) -> list[str]:
    """Put a link's settings in the sidebar and its view and prompt in the session, as if the user had chosen them
    (each within its widget's range); returns what the link asked for that could not be taken as it was."""
    state = st.session_state
    notes = [f"The link's {text} is not a number; the sidebar keeps its value." for text in opened.unreadable]
    names = {key: name for name, (key, _) in URL_SETTINGS.items()}
    for key, value in opened.sidebar.items():
        note = set_setting(key, value, names.get(key), **exit_layer_bound(key))
        notes += [f"The link's {note}"] if note else []
    if opened.tree is not None:
        set_tree_shape(opened.tree)
    if opened.sidebar.get("method") in methods.BRANCHING:  # a head's link: a tree run, or a chain run
        set_setting(HEAD_TREE, opened.tree is not None)
    if opened.lecture:
        set_setting("lecture", True)
    if opened.focus is not None:
        state["focus_view"] = opened.focus
    if opened.prompt is not None:
        state["prompt"] = state["_kept_prompt"] = opened.prompt
    limits = Limits.from_env()
    if opened.pair in PAIR_NAMES and not limits.offers_pair(opened.pair):
        offered = ", ".join(limits.offered_pairs)
        return notes + [
            f"The link's run used the pair {opened.pair!r}, which this server does not offer (it offers {offered}). "
            f"The sidebar keeps its pair, {pair_name(active_sources()[0])!r}."
        ]
    if opened.pair in PAIR_NAMES and pair_name(active_sources()[0]) != opened.pair:
        state["pair_choice"] = state["_kept_pair_choice"] = opened.pair  # the sidebar offers it: one click loads it
    return notes + pair_note(opened, active_sources())


def exit_layer_bound(key: str) -> dict:
    """For the exit layer E: its bound on the target in use, E <= L - 1, where L can be read before loading (as
    set_setting takes it); nothing for other settings."""
    layers = target_layers(active_sources()[0]) if key == "exit_layer" else None
    if not layers or layers < 2:
        return {}
    return {"most": layers - 1, "why": f" (this target has L = {layers} layers, and E = L would be the target itself)"}


def pair_note(opened: OpenedUrl, sources: tuple[str, str, str, str]) -> list[str]:
    """What a link's run was made on, when the sidebar's pair or precision differs (then the run shown differs)."""
    target, _, _, dtype = sources
    same_pair = not opened.pair or opened.pair in (recorded_name(target), pair_name(target))
    same_dtype = not opened.dtype or dtype == "auto" or opened.dtype == dtype
    if same_pair and same_dtype:
        return []
    if opened.pair and no_such_pair(opened.pair):
        return [
            f"The link's run used a pair named {opened.pair!r}, and there is no pair of that name: the pairs are "
            f"{', '.join(PAIR_NAMES)}. The sidebar keeps its pair, {pair_name(target)!r}."
        ]
    return [
        f"The link's run used the target {opened.pair!r} in {opened.dtype or 'its default precision'}; this app's "
        f"sidebar has {recorded_name(target)!r} in {dtype}: load that pair in the sidebar for the same run."
    ]


def no_such_pair(name: str) -> bool:
    """Whether a link's pair names nothing this app could load: no catalogue pair's name, nor a path or a hub id
    (both have a "/": a Custom pair's, which the sidebar can load)."""
    return name not in PAIR_NAMES and "/" not in name


def write_url(params: dict[str, str]) -> None:
    """Keep the address bar on the view shown (rewritten only when it changed): a copied URL opens exactly this."""
    if params != url_now():
        st.query_params.from_dict(params)
    st.session_state[WRITTEN] = params


def shown_params(trace: Trace, cursor: steps.Cursor) -> dict[str, str]:
    """The address of the moment shown, from the session's source, view and lecture mode."""
    state = st.session_state
    source = state.get("rounds_source", "live")
    return page_params(trace, cursor, source, bool(state.get("focus_view")), bool(state.get("lecture")))


def keep_url(trace: Trace, cursor: steps.Cursor) -> None:
    """The address of the moment shown in the address bar."""
    write_url(shown_params(trace, cursor))


def keep_replayed(params: dict[str, str]) -> None:
    """For the in-page player, which writes the moment and the view itself: the address names what is replayed now
    (rewritten whole, at the moment the player starts from, when a trace was picked or a new run made; else left to
    the player), so a bundled trace's address never keeps a live run's settings beside its name."""
    if replayed(url_now()) != replayed(params):
        st.query_params.from_dict(params)
        st.session_state[WRITTEN] = params
    else:
        st.session_state[WRITTEN] = url_now()


# A button that copies a link with the browser's clipboard (Streamlit has none in Python): the page's own address
# (origin and path, as the browser has them) with the query the page wrote, so it works behind any host name or path
# prefix. navigator.clipboard needs a secure context (https or localhost); elsewhere the old copy command is used.
COPY_JS = """<div class="copy-links" style="display:flex;gap:.5rem;align-items:center;flex-wrap:wrap">%s
<span class="copy-done" role="status" style="color:#333"></span></div>
<script>
(() => {
  for (const b of document.querySelectorAll("button.copy-link:not([data-bound])")) {
    b.dataset.bound = "1";
    b.addEventListener("click", async () => {
      const link = location.origin + location.pathname + "?" + b.dataset.query;
      let ok = false;
      try { await navigator.clipboard.writeText(link); ok = true; } catch (e) {
        const area = document.createElement("textarea");
        area.value = link; document.body.appendChild(area); area.select();
        try { ok = document.execCommand("copy"); } catch (e2) { ok = false; }
        area.remove();
      }
      const done = b.parentElement.querySelector(".copy-done");
      if (done) done.textContent = ok ? "Copied " + b.dataset.what + "."
        : "The browser refused to copy: copy the address bar instead.";
      b.blur();
    });
  }
})();
</script>"""
COPY_BUTTON = (
    '<button type="button" class="copy-link" data-what="%s" data-query="%s" title="%s" style="padding:.3rem .75rem;'
    'border:1px solid rgba(49,51,63,.3);border-radius:.5rem;background:#fff;cursor:pointer;font:inherit">%s</button>'
)


def copy_link_html(params: dict[str, str]) -> str:
    """Two copy buttons for the moment shown: its link, and a presenter's link (present=1) to the same moment."""
    from html import escape

    def button(query: str, what: str, tip: str, label: str) -> str:
        return COPY_BUTTON % (escape(what), escape(query), escape(tip), escape(label))

    return COPY_JS % (
        button(query_string(params), "a link to this moment", "This view, this moment", "Copy link to this moment")
        + button(
            query_string(presenter_params(params)),
            "a presenter's link to this moment",
            "Opens full screen on the phase: lecture mode, focus view, sidebar closed",
            "Copy presenter link",
        )
    )


def copy_link_buttons(params: dict[str, str]) -> None:
    """The copy buttons, on the page (st.html runs their script in the page, where the clipboard and address are)."""
    if params:
        st.html(copy_link_html(params), unsafe_allow_javascript=True)
