"""Altair charts of one tree round: the draft tree as it is judged, and the tree attention mask (pure: trace only)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from specviz.core.dyntree import DynamicTree
from specviz.core.lazy import lazy
from specviz.core.trace import ACCEPTED, AFTER_STOP, REJECTED, Node, Round
from specviz.core.verify import tree_size
from specviz.viz import steps
from specviz.viz.palette import ORIGIN_COLORS, ORIGIN_MARKS, P_COLOR, Q_COLOR
from specviz.viz.round_charts import PADDING, chart_title, drawn_chart
from specviz.viz.text import visible

if TYPE_CHECKING:
    import altair as alt
    import pandas as pd
else:
    alt = lazy("altair")
    pd = lazy("pandas")

# What a node of the drawn tree is at the moment shown: colour, point shape and the mark before its token (colour is
# never the only cue).
DRAFTED, NOT_TRIED = "drafted (not judged yet)", "never tried"
NODE_STYLES = {  # status -> (colour, shape, mark)
    DRAFTED: (Q_COLOR, "square", ""),
    ACCEPTED: (ORIGIN_COLORS["accepted"], "circle", ORIGIN_MARKS["accepted"]),
    REJECTED: (ORIGIN_COLORS["rejected"], "cross", ORIGIN_MARKS["rejected"]),
    NOT_TRIED: ("#bdbdbd", "square", "·"),
    "correction": (ORIGIN_COLORS["correction"], "diamond", ORIGIN_MARKS["correction"]),
    "bonus": (ORIGIN_COLORS["bonus"], "triangle-up", ORIGIN_MARKS["bonus"]),
    "prefix": (P_COLOR, "circle", "▶"),
}
ROW_PX = 46  # one leaf row: a node's two-line label (token, q) sits above-right of it, clear of its edges
FRAME_PX = 130  # the title, subtitle and depth axis: Streamlit fits the whole chart, not just its plot, to the height
SUBTITLES = {
    steps.DRAFT: "each node's children are drawn from q at that node; q beside each token",
    steps.VERIFY: "every node goes through the target in one pass",
    steps.JUDGE: "children are tried top to bottom; ◀ marks the one judged now",
    steps.RESOLVE: "the walk has stopped: a correction or a bonus ends it",
    steps.COMMIT: "the accepted path (thick blue edges) and the extra token are committed",
}


CHOSEN_SUBTITLE = "each node's children are its top tokens, chosen, not drawn: q = 1 (one-hot)"
DYNAMIC_SUBTITLE = "kept: the best nodes by cumulative draft log q; ⊕ expanded, +n pruned children; judged one-hot"


def subtitle(r: Round, step: steps.Step) -> str:
    """What this phase of the tree shows; a tree of chosen children (the feature heads' top-b, q one-hot) is not said
    to be drawn from q."""
    if step.phase == steps.DRAFT and r.scored:
        return DYNAMIC_SUBTITLE
    if step.phase == steps.DRAFT and r.nodes and all(node.q == 1.0 for node in r.nodes):
        return CHOSEN_SUBTITLE
    return SUBTITLES.get(step.phase, "")


def tree_layout(r: Round) -> dict[int, tuple[int, float]]:
    """(depth, row) of every node, the root (-1) and the extra token (id len(nodes)): leaves take one row each in
    depth-first order and a parent sits level with its children's mean, so no edge crosses another."""
    extra = len(r.nodes)
    kids = {node.id: [c.id for c in r.children(node.id)] for node in r.nodes} | {-1: [c.id for c in r.children(-1)]}
    if r.extra is not None:  # its slot is kept from the start, so nothing moves when it appears
        kids[r.path[-1] if r.path else -1].append(extra)
    depth = {node.id: node.depth for node in r.nodes} | {-1: 0, extra: len(r.path) + 1}
    rows: dict[int, float] = {}
    leaves = iter(range(len(depth)))  # the next free leaf row

    def place(node: int) -> float:
        below = kids.get(node, [])
        rows[node] = sum(place(c) for c in below) / len(below) if below else float(next(leaves))
        return rows[node]

    place(-1)
    return {node: (depth[node], row) for node, row in rows.items()}


def node_status(r: Round, node: Node, step: steps.Step) -> str:
    """A node's status at this step: drafted until it is judged, then its verdict; never tried once the walk ends."""
    resolved = step.phase in (steps.RESOLVE, steps.COMMIT)
    judged = node.ratio is not None and (resolved or (step.phase == steps.JUDGE and node.id <= step.position))
    if judged:
        return ACCEPTED if node.verdict in (ACCEPTED, AFTER_STOP) else REJECTED
    return NOT_TRIED if resolved else DRAFTED


def tree_frames(r: Round, step: steps.Step, pending: str = "prefix") -> tuple[pd.DataFrame, pd.DataFrame]:
    """tree_rows as frames."""
    nodes, edges = tree_rows(r, step, pending)
    return pd.DataFrame(nodes), pd.DataFrame(edges, columns=["depth", "row", "depth2", "row2", "kind"])


def tree_rows(r: Round, step: steps.Step, pending: str = "prefix") -> tuple[list[dict], list[dict]]:
    """(nodes, edges) of the tree at this step: one node row per drafted token (plus the root and, once the walk
    ends, the extra token) with its status and label; one edge row per parent -> child."""
    at = tree_layout(r)
    shown_extra = r.extra is not None and step.phase in (steps.RESOLVE, steps.COMMIT)
    committed = step.phase == steps.COMMIT
    grown = {c.node: (i, c) for i, c in enumerate(r.scored) if c.node >= 0}  # node id -> (candidate, Scored)
    pruned = _pruned_children(r)
    root = f"▶ {visible(pending)}" + (f"\n+{pruned[-1]} pruned" if pruned.get(-1) else "")
    rows = [_node_row(-1, at[-1], "prefix", root, "the committed text ends here")]
    for node in r.nodes:
        status = node_status(r, node, step)
        current = step.phase == steps.JUDGE and node.id == step.position
        label = f"{NODE_STYLES[status][2]} {visible(node.text)}".strip() + (" ◀" if current else "") + f"\n{_q(node.q)}"
        tip = f"node {node.id + 1}, depth {node.depth}, q={node.q:.4f}"
        if node.id in grown:  # a dynamic tree: the draft's own q, whether it was expanded, its pruned children
            label, tip = _dynamic_label(label, node, grown[node.id], pruned.get(grown[node.id][0], 0), tip)
        if status in (ACCEPTED, REJECTED):
            tip += f", p={node.p:.4f}, min(1,p/q)={node.ratio:.3f}, u={node.u:.3f}"
        rows.append(_node_row(node.id, at[node.id], status, label, tip, current))
    if shown_extra:
        extra = r.extra
        label = f"{ORIGIN_MARKS[extra.kind]} {visible(extra.text)}\n({extra.kind})"
        rows.append(
            _node_row(len(r.nodes), at[len(r.nodes)], extra.kind, label, f"{extra.kind}, prob {extra.prob:.4f}")
        )
    place = {row["id"]: (row["depth"], row["row"]) for row in rows}
    parents = {node.id: node.parent for node in r.nodes} | {len(r.nodes): r.path[-1] if r.path else -1}
    on_path = set(r.path) | ({len(r.nodes)} if shown_extra else set())
    edges = [
        {
            "depth": place[parents[child]][0],
            "row": place[parents[child]][1],
            "depth2": place[child][0],
            "row2": place[child][1],
            "kind": "committed" if committed and child in on_path else "edge",
        }
        for child in place
        if child != -1
    ]
    return rows, edges


def _pruned_children(r: Round) -> dict[int, int]:
    """A dynamic round: per candidate (-1 = the root), how many of its scored children were pruned."""
    out: dict[int, int] = {}
    for c in r.scored:
        if c.node < 0:
            out[c.parent] = out.get(c.parent, 0) + 1
    return out


def _dynamic_label(label: str, node: Node, grown, pruned: int, tip: str) -> tuple[str, str]:
    """A dynamic tree node's label and tooltip: the draft's q (not the one-hot 1 it is judged with), ⊕ when it was
    expanded, +n for its pruned children."""
    _, scored = grown
    head = label.split("\n")[0] + (" ⊕" if scored.expanded else "")
    more = f" +{pruned}" if pruned else ""
    tip = (
        f"node {node.id + 1}, depth {node.depth}, draft q={scored.q:.4f} (judged one-hot), cumulative log q="
        f"{scored.score:.3f}, {'expanded' if scored.expanded else 'not expanded'}, {pruned} pruned children"
    )
    return f"{head}\n{_q(scored.q)}{more}", tip


def _q(q: float) -> str:
    """q as a short label (the tooltip has it exactly): two decimals, or '<0.01' for the long tail."""
    return f"q={q:.2f}" if q >= 0.005 else "q<0.01"


def nodes_said(r: Round, shape: tuple[int, ...]) -> str:
    """How many nodes the round drafted: 'N nodes', or near the end of a run, where the tree is cut to the tokens
    left, 'trimmed to the token budget (N of M nodes)'."""
    full = tree_size(shape)
    if len(r.nodes) < full:
        return f"trimmed to the token budget ({len(r.nodes)} of {full} nodes)"
    return f"{len(r.nodes)} nodes"


def _node_row(node_id: int, at: tuple[int, float], status: str, label: str, tip: str, current: bool = False) -> dict:
    return {"id": node_id, "depth": at[0], "row": at[1], "status": status, "label": label, "tip": tip, "now": current}


def tree_chart(r: Round, step: steps.Step, shape, pending: str = "prefix") -> alt.LayerChart:
    """The draft tree by depth (edges parent -> child, each token with its q), coloured and marked by what the walk
    has decided at this step; at commit the accepted path is drawn thick."""
    nodes, edges = tree_frames(r, step, pending)
    size = tree_size_of(r, nodes.to_dict("records"))
    x = alt.X(
        "depth:Q",
        scale=alt.Scale(domain=size["x_domain"], nice=False, zero=False),
        axis=alt.Axis(values=size["x_values"], format="d", labelFontSize=13, grid=False),
        title="depth (0 = the committed text)",
    )
    y = alt.Y("row:Q", scale=alt.Scale(domain=size["y_domain"], reverse=True, nice=False, zero=False), axis=None)
    lines = (
        alt.Chart(edges)
        .mark_rule()
        .encode(
            x=x,
            y=y,
            x2="depth2:Q",
            y2="row2:Q",
            color=alt.condition(
                "datum.kind == 'committed'", alt.value(ORIGIN_COLORS["accepted"]), alt.value("#9e9e9e")
            ),
            strokeWidth=alt.condition("datum.kind == 'committed'", alt.value(5), alt.value(1.5)),
            opacity=alt.condition("datum.kind == 'committed'", alt.value(0.75), alt.value(0.6)),
        )
    )
    statuses = list(NODE_STYLES)
    points = (
        alt.Chart(nodes)
        .mark_point(filled=True, size=220, opacity=1)
        .encode(
            x=x,
            y=y,
            color=alt.Color(
                "status:N", scale=alt.Scale(domain=statuses, range=[NODE_STYLES[s][0] for s in statuses]), legend=None
            ),
            shape=alt.Shape(
                "status:N", scale=alt.Scale(domain=statuses, range=[NODE_STYLES[s][1] for s in statuses]), legend=None
            ),
            stroke=alt.condition("datum.now", alt.value("black"), alt.value(None)),
            strokeWidth=alt.condition("datum.now", alt.value(3), alt.value(0)),
            tooltip=[alt.Tooltip("label:N", title="token"), alt.Tooltip("tip:N", title="numbers")],
        )
    )
    labels = (
        alt.Chart(nodes)
        .mark_text(align="left", baseline="bottom", dx=8, dy=-4, fontSize=14, font="monospace", lineBreak="\n")
        .encode(
            x=x,
            y=y,
            text="label:N",
            color=alt.condition("datum.status == 'never tried'", alt.value("#8a8a8a"), alt.value("#111111")),
        )
    )
    title = chart_title(*tree_title(r, step, shape))
    return (lines + points + labels).properties(title=title, height=size["height"], padding=PADDING)


def tree_size_of(r: Round, nodes: list[dict]) -> dict:
    """The tree chart's extent from its node rows: the depth axis (domain and ticks), the rows' domain, the height."""
    depth_max = len(r.path) + 1 if r.extra is not None else 0
    depth_max = max(depth_max, int(max(n["depth"] for n in nodes)))
    rows = int(max(n["row"] for n in nodes)) + 1
    return {
        "x_domain": [-0.1, depth_max + 0.9],
        "x_values": list(range(depth_max + 1)),
        "y_domain": [-0.5, rows - 0.5],
        "height": rows * ROW_PX + FRAME_PX,
    }


def tree_title(r: Round, step: steps.Step, shape) -> tuple[str, str]:
    """The tree chart's title (its shape and size) and subtitle (what this phase shows)."""
    if isinstance(shape, DynamicTree):
        expanded = sum(c.expanded for c in r.scored)
        said = f"{len(r.scored)} scored, {expanded} expanded (⊕), {len(r.nodes)} kept"
        return f"The dynamic draft tree {shape.text}: {said}", subtitle(r, step)
    return f"The draft tree {','.join(map(str, shape))}: {nodes_said(r, shape)}", subtitle(r, step)


TREE_KEY = {  # status -> the shape's character, for the key under the chart (text.tree_key_html)
    DRAFTED: "■",
    ACCEPTED: "●",
    REJECTED: "✚",
    NOT_TRIED: "■",
    "correction": "◆",
    "bonus": "▲",
}


DYNAMIC_KEY = [("#111111", "⊕", "expanded (its top-k children scored)"), ("#111111", "+n", "children pruned")]


def tree_key(dynamic: bool = False) -> list[tuple[str, str, str]]:
    """(colour, shape and mark, words) per node status: the chart's key, drawn as text under it; a dynamic tree's
    adds its two marks."""
    key = [(NODE_STYLES[s][0], f"{TREE_KEY[s]} {NODE_STYLES[s][2]}".strip(), s) for s in TREE_KEY]
    return key + (DYNAMIC_KEY if dynamic else [])


def mask_frame(r: Round, committed: int) -> pd.DataFrame:
    """mask_rows as a frame."""
    return pd.DataFrame(mask_rows(r, committed), columns=["query", "key", "status", "mark"])


def mask_rows(r: Round, committed: int) -> list[dict]:
    """The tree attention mask as rows: for each node (a query) and each earlier token of the pass (the committed
    text, then every node), whether it may attend there; committed = the committed text's length."""
    ancestors = {}
    for node in r.nodes:  # breadth-first: a parent's ancestors are known before its children's
        ancestors[node.id] = ({node.parent} | ancestors[node.parent]) if node.parent >= 0 else set()
    keys = ["committed text"] + [_node_name(n) for n in r.nodes]
    rows = []
    for node in r.nodes:
        for k, key in enumerate(keys):
            other = k - 1
            status = (
                "sees (committed text)"
                if other < 0
                else "itself"
                if other == node.id
                else "sees (an ancestor)"
                if other in ancestors[node.id]
                else "blocked"
            )
            rows.append(
                {
                    "query": f"{_node_name(node)} @ {committed - 1 + node.depth}",
                    "key": key,
                    "status": status,
                    "mark": "" if status == "blocked" else "●",
                }
            )
    return rows


def _node_name(node: Node) -> str:
    return f"{node.id + 1} {visible(node.text)}"


MASK_COLORS = {
    "sees (committed text)": "#757575",
    "sees (an ancestor)": P_COLOR,
    "itself": Q_COLOR,
    "blocked": "#ffffff",
}


def mask_chart(r: Round, committed: int) -> alt.LayerChart:
    """One target pass over every node: each row is a node (with its position id), each filled cell ● a token it
    attends to: the committed text, its ancestors and itself, never a sibling's branch."""
    frame = mask_frame(r, committed)
    rows = list(dict.fromkeys(frame["query"]))
    cols = list(dict.fromkeys(frame["key"]))
    base = alt.Chart(frame).encode(
        x=alt.X(
            "key:N",
            sort=cols,
            title="attends to",
            axis=alt.Axis(labelAngle=-50, labelLimit=0, labelOverlap=False, orient="top"),
        ),
        y=alt.Y("query:N", sort=rows, title="node @ position id", axis=alt.Axis(labelLimit=0)),
    )
    cells = base.mark_rect(stroke="#cccccc", strokeWidth=1).encode(
        color=alt.Color(
            "status:N",
            scale=alt.Scale(domain=list(MASK_COLORS), range=list(MASK_COLORS.values())),
            title=None,
            legend=alt.Legend(orient="bottom", labelLimit=0, labelFontSize=13, symbolStrokeColor="#555555"),
        ),
        tooltip=["query:N", "key:N", "status:N"],
    )
    dots = base.mark_text(fontSize=11, color="white").encode(text="mark:N")
    return (cells + dots).properties(
        title=chart_title(
            "Tree attention mask: each node sees the committed text and its ancestors",
            "row = node @ position id (committed length − 1 + depth): siblings share a position",
        ),
        width={"step": 24},
        height={"step": 22},
        padding=PADDING,
    )


def sibling_residual(r: Round, node: Node) -> tuple | None:
    """What the residual chart after a rejected child draws: (top, chosen, origin, (title, subtitle), mark), or None
    when nothing is left to draw."""
    younger = [c for c in r.children(node.parent) if c.id > node.id and c.ratio is not None]
    if younger:
        nxt = younger[0]
        heading = (
            f"Residual after rejecting '{visible(node.text)}'",
            f"norm(max(0, p − q)): the next sibling '{visible(nxt.text)}' is judged against it",
        )
        return nxt.p_top, nxt.token_id, "target", heading, "next sibling"  # target: neutral, its verdict is news
    if r.extra is not None and r.extra.kind == "correction" and r.residual_top:
        heading = (f"Residual after rejecting '{visible(node.text)}'", "no sibling left: the correction is drawn here")
        return r.residual_top, r.extra.token_id, "correction", heading, "drawn"
    return None


def sibling_residual_chart(r: Round, node: Node) -> alt.LayerChart | None:
    """After a rejected child: the target's remaining distribution norm(max(0, p − q)), the next sibling's token
    marked (it is judged against this); after the last child, the residual the correction is drawn from."""
    drawn = sibling_residual(r, node)
    if drawn is None:
        return None
    top, chosen, origin, heading, mark = drawn
    return drawn_chart(top, chosen, origin, chart_title(*heading), "residual probability", mark=mark)
