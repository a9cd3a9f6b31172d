"""Each kind of chart a step draws as one Vega-Lite template, and each chart as its numbers: what the player binds.

A template is the chart builder's own spec (round_charts, tree_charts), styled for the view (normal or lecture) and
converted once per kind and key, with its data taken out (named datasets d0, d1, ...) and its few per-chart values
(the title, the tokens' order along an axis, a scale's domain, the tree's height) replaced by holes
{"$param": name}. A chart is then its rows and those values, computed without Altair: `parts(builder, *args)`.
`bind(template, params, data)` puts them back; the player does the same in JavaScript (static/js/specviz-player.js),
and tests check that a bound template is the builder's Vega-Lite for every chart of the bundled traces.

Templates are kept on disk too (`cache_file`: the user's cache directory, one file per version of specviz's chart
code), so a fresh process (export-html, a restarted server) binds charts without building them or importing Altair.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

from specviz.viz import layout
from specviz.viz import round_charts as charts
from specviz.viz import tree_charts as trees

HOLE = "$param"  # a template's hole: {"$param": name}; Vega-Lite has no such key


@dataclass(frozen=True)
class Chunk:
    """Rows of one dataset: `series` names rows that later charts extend (a run's times, round by round), so a
    bundle stores the longest once and each chart takes its first rows; None: rows stored as they are."""

    rows: list
    series: str | None = None


@dataclass(frozen=True)
class Parts:
    """One chart as data: its kind and key (which template), its datasets (each one or more chunks, concatenated),
    its title (and subtitle) and height when they vary by chart, and its other per-chart values."""

    kind: str
    key: tuple
    data: tuple[tuple[Chunk, ...], ...]
    heading: tuple[str, str] | None = None
    height: int | None = None
    params: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Kind:
    """A chart builder's template recipe: how a chart of it becomes Parts, and where its per-chart values sit."""

    name: str
    parts: Callable[..., Parts | None]
    slots: dict[str, tuple[tuple, ...]]  # param -> its paths in the spec ("*": every item of a list)


def _one(rows: list, series: str | None = None) -> tuple[Chunk, ...]:
    return (Chunk(rows, series),)


def _pq(pos, heading: str = "") -> Parts:
    rows = charts.pq_rows(pos)
    return Parts("pq", (), (_one(rows),), charts.pq_heading(pos, heading), params={"order": charts.pq_order(rows)})


def _acceptance(pos) -> Parts:
    label = charts.acceptance_label(pos)
    verdict = charts.acceptance_verdict(pos)
    data = (_one(charts.acceptance_rows(pos)),)
    return Parts("acceptance", (verdict,), data, charts.acceptance_heading(pos), params={"label": label})


def _block_stop(pos, stop) -> Parts:
    data = (_one(charts.block_stop_rows(pos, stop)),)
    label = charts.acceptance_label(pos)
    return Parts(
        "block_stop",
        (stop.verdict,),
        data,
        charts.block_stop_heading(stop),
        params={"label": label},
    )


def _residual(r, weight=None) -> Parts:
    chosen = r.extra.token_id if r.extra else None
    data = (_one(charts.drawn_rows(r.residual_top, chosen, "correction")),)
    if weight is None:
        return Parts("residual", (r.is_tree,), data)
    return Parts("residual", ("block",), data, charts.residual_heading(r, weight))


def _bonus(r) -> Parts:
    chosen = r.extra.token_id if r.extra else None
    return Parts("bonus", (r.is_tree,), (_one(charts.drawn_rows(r.bonus_top, chosen, "bonus")),))


def _sibling_residual(r, node) -> Parts | None:
    drawn = trees.sibling_residual(r, node)
    if drawn is None:
        return None
    top, chosen, origin, heading, mark = drawn
    return Parts("sibling", (origin,), (_one(charts.drawn_rows(top, chosen, origin, mark)),), heading)


def _cache(r, has_draft=True, before=None, pending=("last",)) -> Parts:
    rows = charts.cache_rows(r, has_draft, before, pending)
    order = list(dict.fromkeys(row["row"] for row in rows))
    return Parts("cache", (r.is_tree,), (_one(rows),), params={"order": order})


def _timing(rounds) -> Parts:
    chunks = (
        Chunk(charts.timing_rows(rounds, "draft"), "draft"),
        Chunk(charts.timing_rows(rounds, "verify"), "verify"),
    )
    return Parts("timing", (), (chunks,))


def _accepted_length(rounds, k) -> Parts:
    return Parts("accepted", (), (_one(charts.accepted_length_rows(rounds, k)),))


def _suffix(r, min_token_prob) -> Parts | None:
    rows = charts.suffix_prob_rows(r, min_token_prob)
    if not rows:
        return None
    data = (_one(rows), _one([{"min_token_prob": min_token_prob}]))
    order = [row["draft"] for row in rows]
    return Parts("suffix", (), data, charts.suffix_prob_title(min_token_prob), params={"order": order})


def _tree(r, step, shape, pending="prefix") -> Parts:
    nodes, edges = trees.tree_rows(r, step, pending)
    size = trees.tree_size_of(r, nodes)
    params = {k: size[k] for k in ("x_domain", "x_values", "y_domain")}
    heading = trees.tree_title(r, step, shape)
    return Parts("tree", (), (_one(edges), _one(nodes)), heading, size["height"], params)


def _mask(r, committed) -> Parts:
    rows = trees.mask_rows(r, committed)
    cols = {"rows": list(dict.fromkeys(row["query"] for row in rows))}
    cols["cols"] = list(dict.fromkeys(row["key"] for row in rows))
    return Parts("mask", (), (_one(rows),), params=cols)


EVERY_LAYER = ("layer", "*", "encoding")
KINDS: dict[Callable, Kind] = {
    charts.pq_chart: Kind("pq", _pq, {"order": (("encoding", "x", "sort"),)}),
    charts.acceptance_chart: Kind("acceptance", _acceptance, {"label": (("layer", 3, "encoding", "text", "value"),)}),
    charts.block_stop_chart: Kind("block_stop", _block_stop, {"label": (("layer", 3, "encoding", "text", "value"),)}),
    charts.residual_chart: Kind("residual", _residual, {}),
    charts.bonus_chart: Kind("bonus", _bonus, {}),
    trees.sibling_residual_chart: Kind("sibling", _sibling_residual, {}),
    charts.cache_chart: Kind("cache", _cache, {"order": ((*EVERY_LAYER, "y", "sort"),)}),
    charts.timing_chart: Kind("timing", _timing, {}),
    charts.accepted_length_chart: Kind("accepted", _accepted_length, {}),
    charts.suffix_prob_chart: Kind("suffix", _suffix, {"order": (("layer", 0, "encoding", "x", "sort"),)}),
    trees.tree_chart: Kind(
        "tree",
        _tree,
        {
            "x_domain": ((*EVERY_LAYER, "x", "scale", "domain"),),
            "x_values": ((*EVERY_LAYER, "x", "axis", "values"),),
            "y_domain": ((*EVERY_LAYER, "y", "scale", "domain"),),
        },
    ),
    trees.mask_chart: Kind(
        "mask", _mask, {"rows": ((*EVERY_LAYER, "y", "sort"),), "cols": ((*EVERY_LAYER, "x", "sort"),)}
    ),
}


def parts(build: Callable, *args) -> Parts | None:
    """A chart of `build(*args)` as data (None: the builder has nothing to draw there), computed without Altair."""
    kind = KINDS.get(build)
    if kind is None:
        raise ValueError(f"{build.__qualname__} has no chart template: add it to viz.chart_templates.KINDS")
    return kind.parts(*args)


def styled_title(heading: tuple[str, str], lecture: bool) -> dict:
    """A chart's title as the view styles it: the builder's chart_title, re-fit as layout.readable (layout.fitted) or
    layout.lectured re-fit it."""
    built = layout.title_params(*heading)
    subtitle = built.get("subtitle", "")
    size, chars = (layout.LECTURE_TITLE_SIZE, layout.LECTURE_TITLE_CHARS) if lecture else (layout.TITLE_SIZE, None)
    return layout.title_params(built["text"], subtitle, size, chars)


def styled_height(height: int, lecture: bool) -> int:
    """A fixed height as the view styles it (lecture mode: layout.LECTURE_HEIGHT times taller)."""
    return int(height * layout.LECTURE_HEIGHT) if lecture else height


def view_params(chart: Parts, lecture: bool) -> dict:
    """Every hole's value for this chart in this view (the title and height styled for it)."""
    params = dict(chart.params)
    if chart.heading is not None:  # its lines: the rest of the title (sizes, anchor) is the template's
        title = styled_title(chart.heading, lecture)
        params["title"] = title["text"]
        if chart.heading[1]:
            params["subtitle"] = title["subtitle"]
    if chart.height is not None:
        params["height"] = styled_height(chart.height, lecture)
    return params


def rows_of(data: tuple[Chunk, ...]) -> list:
    return [row for chunk in data for row in chunk.rows]


_TEMPLATES: dict[str, dict] = {}  # a template's key (kind, key, subtitle, lecture as JSON) -> the template
_READ: list[Path] = []  # the cache file this process has read (once)
CACHE_FORMAT = 1  # the cache file's own layout


def source_hash() -> str:
    """What shapes a template: the source of specviz's chart code (every module of specviz.viz) and Altair's version;
    a cache file made by other code is never read."""
    digest = hashlib.sha256(f"{CACHE_FORMAT}|{metadata.version('altair')}".encode())
    for path in sorted(Path(__file__).parent.glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def cache_file() -> Path:
    """Where templates are kept between processes: $SPECVIZ_TEMPLATE_CACHE, else templates/ under $SPECVIZ_CACHE,
    $XDG_CACHE_HOME/specviz or ~/.cache/specviz (where the models are), named by the chart code's hash."""
    name = f"chart-templates-{source_hash()}.json"
    if os.environ.get("SPECVIZ_TEMPLATE_CACHE"):
        return Path(os.environ["SPECVIZ_TEMPLATE_CACHE"]).expanduser() / name
    if os.environ.get("SPECVIZ_CACHE"):
        root = Path(os.environ["SPECVIZ_CACHE"]).expanduser()
    else:
        xdg = os.environ.get("XDG_CACHE_HOME")
        root = (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "specviz"
    return root / "templates" / name


def _load_cache() -> None:
    """The templates a previous process kept (none when the file is missing, unreadable or of other code)."""
    _READ.append(cache_file())
    try:
        kept = json.loads(_READ[0].read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    if isinstance(kept, dict) and kept.get("format") == CACHE_FORMAT and isinstance(kept.get("templates"), dict):
        _TEMPLATES.update(kept["templates"])


def _save_cache() -> None:
    """Keep every template built so far for later processes (atomically; a cache that cannot be written is skipped)."""
    path = _READ[0]
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        spare = path.with_suffix(f".{os.getpid()}.tmp")
        spare.write_text(json.dumps({"format": CACHE_FORMAT, "templates": _TEMPLATES}), encoding="utf-8")
        os.replace(spare, path)
    except OSError:
        pass


def template(build: Callable, args: tuple, chart: Parts, lecture: bool) -> dict:
    """The template of this chart's kind and key in this view: built once (from this chart, an exemplar) and kept, in
    this process and on disk for the next."""
    if not _READ:
        _load_cache()
    key = json.dumps([chart.kind, list(chart.key), chart.heading is not None and bool(chart.heading[1]), lecture])
    if key not in _TEMPLATES:
        _TEMPLATES[key] = make_template(build, args, chart, lecture)
        _save_cache()
    return _TEMPLATES[key]


def make_template(build: Callable, args: tuple, chart: Parts, lecture: bool) -> dict:
    """The builder's styled spec for an exemplar chart, its datasets renamed d0, d1, ... (by which of the chart's
    datasets each holds) and taken out, its per-chart values made holes."""
    from altair.utils.schemapi import debug_mode  # here: a process with its templates cached never imports Altair

    style = layout.lectured if lecture else layout.readable  # as step_view.styled styles a step's charts
    with debug_mode(False):
        spec = style(build(*args)).to_dict(validate=False)
    datasets = spec.pop("datasets", {})
    wanted = [json.dumps(rows_of(d), sort_keys=True) for d in chart.data]
    names = {}
    for name, rows in datasets.items():
        text = json.dumps(rows, sort_keys=True)
        if text not in wanted:
            raise ValueError(f"{chart.kind}: a dataset of the builder's spec is none of the chart's rows")
        names[name] = f"d{wanted.index(text)}"
    spec = _renamed(spec, names)
    slots = dict(next(k for k in KINDS.values() if k.name == chart.kind).slots)
    if chart.heading is not None:
        slots["title"] = (("title", "text"),)
        if chart.heading[1]:
            slots["subtitle"] = (("title", "subtitle"),)
    if chart.height is not None:
        slots["height"] = (("height",),)
    for name, paths in slots.items():
        for path in paths:
            _punch(spec, path, name)
    return spec


def _renamed(node, names: dict[str, str]):
    if isinstance(node, dict):
        if set(node) == {"name"} and node["name"] in names:
            return {"name": names[node["name"]]}
        return {k: _renamed(v, names) for k, v in node.items()}
    if isinstance(node, list):
        return [_renamed(v, names) for v in node]
    return node


def _punch(spec, path: tuple, name: str) -> None:
    """Make the value at path a hole (every item where the path says "*"); a path the spec lacks is an error."""
    *head, last = path
    nodes = [spec]
    try:
        for step in head:
            nodes = [item for node in nodes for item in (node if step == "*" else [node[step]])]
        for node in nodes:
            node[last]  # noqa: B018 - the value must be there to be a hole
            node[last] = {HOLE: name}
    except (KeyError, IndexError, TypeError):
        raise KeyError(f"the template has nothing at {path} for {name!r}") from None


def bind(spec: dict, params: dict, datasets: dict[str, list]) -> dict:
    """A template with its holes filled and its datasets put in: the chart's whole Vega-Lite spec."""
    out = _filled(spec, params)
    if datasets:
        out["datasets"] = datasets
    return out


def _filled(node, params: dict):
    if isinstance(node, dict):
        if len(node) == 1 and HOLE in node:
            return copy.deepcopy(params[node[HOLE]])
        return {k: _filled(v, params) for k, v in node.items()}
    if isinstance(node, list):
        return [_filled(v, params) for v in node]
    return node
