"""A trace as a player bundle: every step's blocks in every view, ready for a browser to step through with no Python.

The bundle is one JSON-serialisable dict (format "specviz.player", version 3; docs/player-format.md): tables of the
unique HTML fragments, the committed text's spans per round, one Vega-Lite template per chart kind and view size
(viz.chart_templates), each chart as its template, its datasets and its few values, the datasets (columns and rows),
and the layout rows, referenced by index from each step; each step's navigation (next / previous step, next round,
next rejection, next bonus, first, last) as step indices, and its moment as the round page's URL query. It is built
from viz.step_view (lazy: charts as their numbers, no Altair chart per step), the round page's own source of truth,
so a player that draws it looks like the page. It is sent in a compact wire form (viz.player_wire: strings once,
datasets column-wise, no repeated keys); `load_bundle` reads one back, checks its format and version and decodes it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace

from specviz.core.trace import REJECTED, Trace
from specviz.errors import PlayerFormatError
from specviz.viz import chart_templates as ct
from specviz.viz import run_notes, steps
from specviz.viz import step_view as sv
from specviz.viz.player_wire import decoded, encoded
from specviz.viz.text import CommittedText, TextParts, literal

FORMAT, VERSION = "specviz.player", 3
DOCUMENT_VERSION = 2  # the document without the wire form (what load_bundle decodes to): still read
VIEWS = {  # view name -> its options (recorded timings: a bundle replays a finished run)
    "full": sv.ViewOptions(),
    "full+lecture": sv.ViewOptions(lecture=True),
    "focus": sv.ViewOptions(focus=True),
    "focus+lecture": sv.ViewOptions(lecture=True, focus=True),
}
NAVIGATION = ("next", "previous", "next_round", "next_rejection", "next_bonus", "first", "last")


def navigation(
    trace: Trace, cursor: steps.Cursor, index: dict[steps.Cursor, int], events: dict[str, list] | None = None
) -> dict[str, int | None]:
    """Where each key of the round page goes from this moment, as step indices (None: nowhere, the key is off).
    events: next_events(trace)'s answers for every moment (else each is searched for)."""
    if events is None:
        found = {kind: steps.next_event(trace, cursor, kind) for kind in ("rejection", "bonus")}
        found = {kind: None if at is None else index[at] for kind, at in found.items()}
    else:
        found = {kind: events[kind][index[cursor]] for kind in ("rejection", "bonus")}
    return {
        "next": index[steps.next_step(trace, cursor)],
        "previous": index[steps.previous_step(trace, cursor)],
        "next_round": index[steps.next_round(trace, cursor)],
        "next_rejection": found["rejection"],
        "next_bonus": found["bonus"],
        "first": 0,
        "last": index[steps.last_cursor(trace)],
    }


def next_events(trace: Trace, moments: list[steps.Cursor]) -> dict[str, list[int | None]]:
    """For every moment, the step index of the next rejection and of the next bonus after it (steps.next_event's
    answers), found in one pass from the end instead of a search from each moment."""
    out = {"rejection": [None] * len(moments), "bonus": [None] * len(moments)}
    ahead = {"rejection": None, "bonus": None}
    for i in range(len(moments) - 1, -1, -1):
        out["rejection"][i], out["bonus"][i] = ahead["rejection"], ahead["bonus"]
        cursor = moments[i]
        step, r = steps.current_step(trace, cursor), trace.rounds[cursor.round]
        if step.phase == steps.JUDGE and steps.judged_item(r, step.position).verdict == REJECTED:
            ahead["rejection"] = i
        if step.phase == steps.RESOLVE and r.extra is not None and r.extra.kind == "bonus":
            ahead["bonus"] = i
    return out


_BOLD = re.compile(r"\*\*(.+?)\*\*")
_BARE_AMP = re.compile(r"&(?!#\d+;|#x[0-9a-fA-F]+;|[a-zA-Z]+;)")


def markdown_html(text: str) -> str:
    """The step sentences' Markdown as HTML: their only syntax is **bold** (user and trace text in them is inert,
    written as character references by viz.text.literal); a bare <, > or & of the sentence itself is escaped."""
    text = _BARE_AMP.sub("&amp;", text).replace("<", "&lt;").replace(">", "&gt;")
    return _BOLD.sub(r"<b>\1</b>", text)


def metrics_html(metrics: tuple[tuple[str, str, str], ...]) -> str:
    """A row of numbers as HTML: each label above its value, its help in a tooltip."""
    cells = "".join(
        f'<div class="metric" title="{literal(tip)}"><div class="metric-label">{literal(label)}</div>'
        f'<div class="metric-value">{literal(value)}</div></div>'
        for label, value, tip in metrics
    )
    return f'<div class="metrics">{cells}</div>'


def block_html(block: sv.Block) -> str:
    """What a player shows for a block that is not a chart, as an HTML fragment."""
    kind, content = block.kind, block.content
    if kind == sv.MARKDOWN:
        return f"<p>{markdown_html(content)}</p>"
    if kind == sv.CAPTION:
        return f'<p class="caption">{markdown_html(content)}</p>'
    if kind == sv.HEADING:
        return f"<h3>{markdown_html(content)}</h3>"
    if kind == sv.METRICS:
        return metrics_html(content)
    if kind == sv.DIVIDER:
        return "<hr>"
    return content  # HTML: specviz's own fragment


class _Tables:
    """The bundle's tables, each entry stored once and referenced by index: HTML fragments, chart templates, charts
    (a template, its datasets and its values), datasets (columns and rows), and rows of a step's layout."""

    def __init__(self):
        self.html, self.templates, self.charts, self.datasets, self.rows = [], [], [], [], []
        self._seen: dict[tuple[str, str], int] = {}
        self._series: dict[str, int] = {}  # a series' name -> its dataset (extended as later charts hold more rows)
        self._series_rows: dict[int, list[dict]] = {}  # a series' dataset -> its rows as dicts
        self._calls: dict[int, tuple[int, object]] = {}
        self._blocks: dict[tuple[str, int], tuple[object, int]] = {}  # (kind, id of content) -> (content, html)
        self._chunks: dict[int, tuple[ct.Chunk, list]] = {}  # id of a chart's rows -> (the rows, their dataset ref)
        self._row_seen: dict[tuple, tuple[tuple, int]] = {}  # a row's places, kinds and contents' ids -> its entry

    def _index(self, table: list, name: str, entry, key: str | None = None) -> int:
        key = json.dumps(entry, sort_keys=True, ensure_ascii=False) if key is None else key
        if (name, key) not in self._seen:
            self._seen[name, key] = len(table)
            table.append(entry)
        return self._seen[name, key]

    def html_index(self, fragment: str) -> int:
        return self._index(self.html, "html", fragment, fragment)

    def _dataset(self, chunk: ct.Chunk) -> list:
        """A chunk's rows as a dataset reference [index, row count]: a series' rows go into its one dataset, which
        grows as later charts (later rounds) hold more of them."""
        if chunk.series is None:  # one chart's rows: the lecture and normal views' calls share them, so made once
            known = self._chunks.get(id(chunk))
            if known is None or known[0] is not chunk:
                ref = [self._index(self.datasets, "data", columnar(chunk.rows)), len(chunk.rows)]
                known = self._chunks[id(chunk)] = (chunk, ref)
            return list(known[1])
        i = self._series.get(chunk.series)
        if i is not None:
            stored = self._series_rows[i]  # the series' rows as dicts (not expanded again from its columns each time)
            if len(stored) < len(chunk.rows) and stored == chunk.rows[: len(stored)]:
                self.datasets[i] = extended(self.datasets[i], chunk.rows[len(stored) :])
                stored += chunk.rows[len(stored) :]
            if self._series_rows[i][: len(chunk.rows)] == chunk.rows:
                return [i, len(chunk.rows)]
        self._series[chunk.series] = len(self.datasets)
        self._series_rows[len(self.datasets)] = list(chunk.rows)
        self.datasets.append(columnar(chunk.rows))
        return [len(self.datasets) - 1, len(chunk.rows)]

    def chart_index(self, call: sv.ChartCall) -> int:
        """A chart as its template, its datasets and its values (charts shared by steps and views: one entry)."""
        if id(call) not in self._calls:
            chart = call.parts
            spec = ct.template(call.build, call.args, chart, call.lecture)
            t = self._index(
                self.templates,
                "template",
                spec,
                f"{chart.kind}|{chart.key}|{bool(chart.heading and chart.heading[1])}|{call.lecture}",
            )
            data = [[self._dataset(chunk) for chunk in dataset] for dataset in chart.data]
            self.charts.append({"template": t, "data": data, "params": ct.view_params(chart, call.lecture)})
            self._calls[id(call)] = (len(self.charts) - 1, call)  # the call kept: its id stays its own
        return self._calls[id(call)][0]

    def block(self, block: sv.Block) -> list:
        if block.kind == sv.CHART:
            return [sv.CHART, self.chart_index(block.content)]
        if isinstance(block.content, CommittedText | TextParts):  # the committed text: a prefix of the run's rounds
            text = block.content
            return [TEXT, [self.html_index(text.before), text.rounds, self.html_index(text.after)]]
        known = self._blocks.get((block.kind, id(block.content)))  # a panel shown again by later steps: made once
        if known is None or known[0] is not block.content:
            known = self._blocks[block.kind, id(block.content)] = (block.content, self.html_index(block_html(block)))
        return [block.kind, known[1]]

    def row_index(self, row: sv.Row) -> int:
        """A row's entry: a row of a panel shown again by a later step (the same blocks' contents) is found by their
        identities, without making its blocks' HTML again."""
        contents = tuple(b.content for c in row.columns for b in c.blocks)
        key = (row.section, tuple((c.place, c.width, tuple(b.kind for b in c.blocks)) for c in row.columns))
        key += tuple(map(id, contents))
        known = self._row_seen.get(key)
        if known is not None and all(a is b for a, b in zip(known[0], contents, strict=True)):
            return known[1]
        index = self._row_index(row)
        self._row_seen[key] = (contents, index)  # the contents kept: their ids stay their own
        return index

    def _row_index(self, row: sv.Row) -> int:
        columns = [(c.place, c.width, [self.block(b) for b in c.blocks]) for c in row.columns]
        entry = {"section": row.section, "columns": [{"place": p, "width": w, "blocks": b} for p, w, b in columns]}
        return self._index(self.rows, "row", entry, repr((row.section, columns)))


TEXT = "text"  # a bundle's block of the committed text: [before, rounds, after] (html indices, a count of rounds)


def columnar(rows: list[dict]) -> dict:
    """Rows of dicts as {"columns", "rows"}: each key once, each row its values in the columns' order."""
    columns = list(dict.fromkeys(k for row in rows for k in row))
    return {"columns": columns, "rows": [[row.get(k) for k in columns] for row in rows]}


def extended(dataset: dict, rows: list[dict]) -> dict:
    """A columnar dataset with more rows after its own: columnar(its rows + rows), made by appending them (a series
    grows by a round at a time; making it afresh each time made a long run's bundle quadratic)."""
    columns = dataset["columns"]
    if any(k not in columns for row in rows for k in row):  # a new column: made afresh, in first-seen order
        return columnar(expanded(dataset) + rows)
    dataset["rows"] += [[row.get(k) for k in columns] for row in rows]  # in place: the series' own dataset
    return dataset


def expanded(dataset: dict) -> list[dict]:
    """A columnar dataset's rows as dicts again."""
    return [dict(zip(dataset["columns"], values, strict=True)) for values in dataset["rows"]]


def _rows(view: sv.StepView, tables: _Tables) -> list[int]:
    return [tables.row_index(row) for row in sv.rows(view.blocks)]


def step_index(trace: Trace, cursor: steps.Cursor) -> int:
    """The bundle's step index of a moment (its place in playback order): where a player starts for that cursor."""
    for i, at in enumerate(steps.moments(trace)):
        if at == cursor:
            return i
    return 0


def player_bundle(
    trace: Trace, title: str = "", about: str = "", views: tuple[str, ...] = tuple(VIEWS), live: bool = False
) -> dict:
    """The trace as a player bundle: every step in every view named (VIEWS), de-duplicated, with its navigation and
    moment. title and about: what the run is, in words (a bundled trace's own; otherwise its settings). live: the
    run was just made on this machine (the round page's live run), so its times are called this machine's; a file
    handed out, a bundled or an uploaded trace keeps the recorded wording. In its wire form (load_bundle decodes it)."""
    unknown = [v for v in views if v not in VIEWS]
    if unknown:
        raise PlayerFormatError(f"unknown player view(s) {', '.join(unknown)}: choose from {', '.join(VIEWS)}")
    moments = list(steps.moments(trace))
    index = {cursor: i for i, cursor in enumerate(moments)}
    tables, memo, out, events = _Tables(), {}, [], next_events(trace, moments)
    for cursor in moments:
        shown = {name: sv.step_view(trace, cursor, replace(VIEWS[name], live=live), memo, lazy=True) for name in views}
        first = next(iter(shown.values()))
        out.append(
            {
                "round": cursor.round,
                "step": cursor.step,
                "phase": first.phase,
                "title": first.title,
                "moment": first.moment,
                "query": steps.query_string(first.moment),
                "nav": navigation(trace, cursor, index, events),
                "views": {name: _rows(view, tables) for name, view in shown.items()},
            }
        )
    return encoded(
        {
            "format": FORMAT,
            "version": VERSION,
            "title": title or f"A run of {run_notes.settings_summary(trace.settings)}",
            "about": about
            or (
                f"A run of {run_notes.settings_summary(trace.settings)}, timed here." if live else recorded_about(trace)
            ),
            "rounds": len(trace.rounds),
            "views": list(views),
            "phase_titles": steps.PHASE_TITLES,
            "html": tables.html,
            "text": memo["spans"][1],
            "templates": tables.templates,
            "charts": tables.charts,
            "datasets": tables.datasets,
            "rows": tables.rows,
            "steps": out,
        }
    )


def recorded_about(trace: Trace) -> str:
    """What a run is when nobody has said: its settings, and where its times were measured."""
    return (
        f"A run recorded with {run_notes.settings_summary(trace.settings)}. Its draft and verify times were measured "
        f"on {run_notes.machine_name(trace.meta)} when it was recorded."
    )


@dataclass(frozen=True)
class LoadedBundle:
    """A bundle read back: the document decoded from its wire form, and its blocks expanded from the tables (as the
    player does)."""

    doc: dict

    def blocks(self, step: int, view: str) -> list[tuple[str, str, object]]:
        """One step's blocks in one view, in order: (kind, place, HTML fragment or the chart's whole Vega-Lite)."""
        doc, out = self.doc, []
        for r in doc["steps"][step]["views"][view]:
            for column in doc["rows"][r]["columns"]:
                for kind, i in column["blocks"]:
                    if kind == sv.CHART:
                        out.append((kind, column["place"], self.chart(i)))
                    elif kind == TEXT:
                        out.append((sv.HTML, column["place"], self.text(*i)))
                    else:
                        out.append((kind, column["place"], doc["html"][i]))
        return out

    def text(self, before: int, rounds: int, after: int) -> str:
        """The committed text after this many rounds, as HTML."""
        html = self.doc["html"]
        return html[before] + "".join(self.doc["text"][:rounds]) + html[after]

    def chart(self, i: int) -> dict:
        """A chart's whole Vega-Lite spec: its template with its values and datasets put in (d0, d1, ...)."""
        entry = self.doc["charts"][i]
        datasets = {
            f"d{n}": [row for ds, count in refs for row in expanded(self.doc["datasets"][ds])[:count]]
            for n, refs in enumerate(entry["data"])
        }
        return ct.bind(self.doc["templates"][entry["template"]], entry["params"], datasets)


def load_bundle(source: str | bytes | dict) -> LoadedBundle:
    """A bundle from its JSON text (or the dict), with its format and version checked, decoded from its wire form (a
    version 2 bundle, the document itself, is read as it is)."""
    try:
        doc = json.loads(source) if isinstance(source, str | bytes) else source
    except ValueError as exc:
        raise PlayerFormatError(f"not a player bundle: the text is not JSON ({exc})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        found = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
        raise PlayerFormatError(
            f"not a player bundle: its format is {found!r}, not {FORMAT!r} (make one with specviz.viz.player_bundle)"
        )
    if doc.get("version") == DOCUMENT_VERSION and isinstance(doc.get("steps"), list):
        return LoadedBundle(doc)  # version 2 sent the document itself: read as it is
    if doc.get("version") != VERSION:
        raise PlayerFormatError(
            f"a player bundle of version {doc.get('version')!r}: this specviz reads version {VERSION}; rebuild the "
            "bundle from its trace with this version"
        )
    tables = ("strings", "html", "text", "templates", "values", "charts", "columns", "datasets", "rows", "steps")
    missing = [key for key in (*tables, "views") if key not in doc]
    if missing:
        raise PlayerFormatError(f"a player bundle without its {', '.join(missing)}: rebuild it from its trace")
    return LoadedBundle(decoded(doc))


def bundle_json(bundle: dict) -> str:
    """The bundle as compact JSON text (what the HTML export embeds and a server hands out): strict JSON, as a browser
    reads it, so a number that is not finite (NaN, infinity) is refused here, not left for the browser to fail on."""
    try:
        return json.dumps(bundle, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except ValueError as exc:
        raise PlayerFormatError(
            f"This run holds a number that is not finite (NaN or infinity), which a player bundle cannot hold ({exc}); "
            "a trace read from a file is checked for them, so this one came from a run whose model gave such a value."
        ) from None
