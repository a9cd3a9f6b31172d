"""A player bundle's wire form (version 3): the same document, sent compactly, and decoded back the same way by Python
(`decoded`) and by the player's JavaScript (`decode` in static/js/specviz-player.js).

Every string the tables repeat (HTML pieces, token texts, column names, block kinds, places, phases, parameter names)
is stored once in `strings`, most used first (the shortest indices), and referred to by index. An HTML fragment and a
round's committed text are cut before each tag, after it and before a title attribute, so the metrics' long
tooltips and the tokens' styles go once. A dataset goes column-wise (a column of strings as indices), its column
names one shared list, its floats rounded to what the charts show (`rounded`); charts, layout rows and steps drop
their keys, and steps go column-wise (a step's moment is its query, read back). docs/player-format.md has the layout.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from urllib.parse import parse_qsl

STRINGS = "$s"  # a value of strings by index: {"$s": i} or {"$s": [i, ...]}; Vega-Lite has no such key
_CUT = re.compile(r'(?=<)|(?<=>)|(?= title=")')
COPIED = ("format", "version", "title", "about", "rounds", "views", "phase_titles", "templates")


class _Str(str):
    """A string to be sent as its index in the strings table (replaced by `_indexed`)."""


def rounded(x):
    """A number as the bundle sends it: floats to 4 significant digits below 1 and 4 decimals from 1 up, which is what
    the charts show (tooltips .4f and .4~g, times .2f); bars and points do not move by a pixel."""
    if isinstance(x, float):
        return float(f"{x:.4g}") if abs(x) < 1 else round(x, 4)
    return x


def pieces(html: str) -> list[_Str]:
    """An HTML fragment cut where fragments repeat themselves: before and after each tag, before a title attribute."""
    return [_Str(p) for p in _CUT.split(html) if p]


def _typed(value):
    """A chart's parameter value: a string or a list of strings by index, anything else as it is."""
    if isinstance(value, str):
        return {STRINGS: _Str(value)}
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return {STRINGS: [_Str(v) for v in value]}
    return value


def _column(values: list):
    """A dataset's column: {"$s": [indices]} for strings, else its values (floats rounded)."""
    if values and all(isinstance(v, str) for v in values):
        return {STRINGS: [_Str(v) for v in values]}
    return [rounded(v) for v in values]


class _Table:
    """Entries stored once, by their JSON text."""

    def __init__(self):
        self.entries, self._at = [], {}

    def index(self, entry, stored=None) -> int:
        key = json.dumps(entry, sort_keys=True, ensure_ascii=False)
        if key not in self._at:
            self._at[key] = len(self.entries)
            self.entries.append(entry if stored is None else stored)
        return self._at[key]


def encoded(doc: dict) -> dict:
    """The bundle document (docs/player-format.md, "The document") in its wire form."""
    values, columns = _Table(), _Table()
    wire = {key: doc[key] for key in COPIED}
    wire["html"] = [pieces(h) for h in doc["html"]]
    wire["text"] = [pieces(t) for t in doc["text"]]
    wire["charts"] = [
        [c["template"], c["data"], [x for k, v in c["params"].items() for x in (_Str(k), values.index(v, _typed(v)))]]
        for c in doc["charts"]
    ]
    wire["datasets"] = [
        [columns.index(d["columns"], [_Str(c) for c in d["columns"]])]
        + [_column([row[k] for row in d["rows"]]) for k in range(len(d["columns"]))]
        for d in doc["datasets"]
    ]
    wire["values"], wire["columns"] = values.entries, columns.entries
    wire["rows"] = [
        [_Str(r["section"])]
        + [[_Str(c["place"]), c["width"], [[_Str(k), i] for k, i in c["blocks"]]] for c in r["columns"]]
        for r in doc["rows"]
    ]
    steps = doc["steps"]
    nav = list(steps[0]["nav"]) if steps else []
    wire["steps"] = {
        "round": [s["round"] for s in steps],
        "step": [s["step"] for s in steps],
        "phase": [_Str(s["phase"]) for s in steps],
        "title": [s["title"] for s in steps],
        "query": [s["query"] for s in steps],
        "nav": {k: [s["nav"][k] for s in steps] for k in nav},
        "views": {v: [s["views"][v] for s in steps] for v in doc["views"]},
    }
    return _indexed(wire)


def _walk(node, found: Counter):
    if isinstance(node, _Str):
        found[str(node)] += 1
    elif isinstance(node, dict):
        for v in node.values():
            _walk(v, found)
    elif isinstance(node, list):
        for v in node:
            _walk(v, found)


def _replaced(node, index: dict):
    if isinstance(node, _Str):
        return index[str(node)]
    if isinstance(node, dict):
        return {k: _replaced(v, index) for k, v in node.items()}
    if isinstance(node, list):
        return [_replaced(v, index) for v in node]
    return node


def _indexed(wire: dict) -> dict:
    """The wire document with each marked string replaced by its index in `strings` (most used first)."""
    found: Counter[str] = Counter()
    _walk(wire, found)
    strings = [s for s, _ in found.most_common()]
    index = {s: i for i, s in enumerate(strings)}
    return {"strings": strings} | _replaced(wire, index)


def _value(value, strings: list):
    if isinstance(value, dict) and set(value) == {STRINGS}:
        found = value[STRINGS]
        return [strings[i] for i in found] if isinstance(found, list) else strings[found]
    return value


def decoded(wire: dict) -> dict:
    """The bundle document from its wire form (its floats as rounded)."""
    s = wire["strings"]
    doc = {key: wire[key] for key in COPIED}
    doc["html"] = ["".join(s[i] for i in p) for p in wire["html"]]
    doc["text"] = ["".join(s[i] for i in p) for p in wire["text"]]
    values = [_value(v, s) for v in wire["values"]]
    doc["charts"] = [
        {"template": t, "data": data, "params": {s[p[i]]: values[p[i + 1]] for i in range(0, len(p), 2)}}
        for t, data, p in wire["charts"]
    ]
    doc["datasets"] = [
        {"columns": [s[i] for i in wire["columns"][c]], "rows": [list(r) for r in zip(*(_value(x, s) for x in cols))]}
        for c, *cols in wire["datasets"]
    ]
    doc["rows"] = [
        {
            "section": s[section],
            "columns": [
                {"place": s[place], "width": width, "blocks": [[s[k], i] for k, i in blocks]}
                for place, width, blocks in columns
            ],
        }
        for section, *columns in wire["rows"]
    ]
    st = wire["steps"]
    doc["steps"] = [
        {
            "round": st["round"][i],
            "step": st["step"][i],
            "phase": s[st["phase"][i]],
            "title": st["title"][i],
            "moment": dict(parse_qsl(st["query"][i])),
            "query": st["query"][i],
            "nav": {k: column[i] for k, column in st["nav"].items()},
            "views": {v: column[i] for v, column in st["views"].items()},
        }
        for i in range(len(st["round"]))
    ]
    return doc
