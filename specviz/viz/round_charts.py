"""Altair charts of one round and of a run, built from the trace alone (pure: no streamlit, no models)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from specviz.core.lazy import lazy
from specviz.core.trace import Node, Position, Round, TokenProb
from specviz.viz.block_stops import BlockStop
from specviz.viz.layout import PADDING, TITLE_CHARS, chart_title  # noqa: F401 - TITLE_CHARS: part of this API
from specviz.viz.palette import ORIGIN_COLORS, ORIGIN_MARKS, P_COLOR, Q_COLOR
from specviz.viz.text import prob, visible

if TYPE_CHECKING:
    import altair as alt
    import pandas as pd
else:
    alt = lazy("altair")
    pd = lazy("pandas")

DIST_COLORS = {"q (draft)": Q_COLOR, "p (target)": P_COLOR}
VERDICT_COLORS = {"accepted": ORIGIN_COLORS["accepted"], "rejected": ORIGIN_COLORS["rejected"]}
TOP_SHOWN = 6


def _token_label(token_id: int, text: str) -> str:
    return f"{visible(text)} #{token_id}"


TOKEN_LABEL_PX = 72  # a token's text is cut to this width (an ellipsis says so): six of them share a half column
# Each token on two lines, its text over its id, so that a real vocabulary's long pieces and five-digit ids do not run
# into their neighbours (smollm2's "␣encounters #18342" did at 1280 px); the text has no spaces (visible() shows them).
TOKEN_AXIS_OPTIONS = {
    "labelAngle": 0,
    "labelExpr": "split(replace(datum.label, ' #', '\\n#'), '\\n')",
    "labelLimit": TOKEN_LABEL_PX,
    "labelOverlap": False,
}


def pq_frame(pos: Position | Node) -> pd.DataFrame:
    """pq_rows as a frame."""
    return pd.DataFrame(pq_rows(pos))


def pq_rows(pos: Position | Node) -> list[dict]:
    """Long rows of q and p over the proposal and the top tokens of each; unknown values (outside a top-10) are NaN.
    A tree node's p is the distribution it was judged against (p at its parent, or the residual its elders left)."""
    p = {t.token_id: t.prob for t in pos.p_top} | {pos.token_id: pos.p}
    q = {t.token_id: t.prob for t in pos.q_top} | {pos.token_id: pos.q}
    texts = {t.token_id: t.text for t in (*pos.p_top, *pos.q_top)} | {pos.token_id: pos.text}
    ranked = sorted(texts, key=lambda t: -max(p.get(t, 0.0), q.get(t, 0.0)))
    shown = list(dict.fromkeys([pos.token_id, *ranked]))[:TOP_SHOWN]
    rows = [
        {"token": _token_label(t, texts[t]), "dist": name, "prob": source.get(t), "proposal": t == pos.token_id}
        for t in shown
        for name, source in (("q (draft)", q), ("p (target)", p))
    ]
    return rows


def pq_order(rows: list[dict]) -> list[str]:
    """The tokens along x, in the rows' order: the proposal first, then the top tokens."""
    return list(dict.fromkeys(row["token"] for row in rows))


def pq_heading(pos: Position | Node, heading: str = "") -> tuple[str, str]:
    """The pq chart's title and subtitle."""
    return heading or f"Position {pos.index + 1}: q and p of '{visible(pos.text)}'", PQ_SUBTITLE


PQ_SUBTITLE = "the proposal outlined, then top tokens"


def pq_chart(pos: Position | Node, heading: str = "") -> alt.Chart:
    """Paired bars of q and p over the top tokens, the proposal outlined: the ratio p/q is read off the pair."""
    frame = pq_frame(pos)
    order = pq_order(pq_rows(pos))
    return (
        alt.Chart(frame, title=chart_title(*pq_heading(pos, heading)))
        .mark_bar()
        .encode(
            x=alt.X("token:N", sort=order, title="token", axis=alt.Axis(**TOKEN_AXIS_OPTIONS)),
            xOffset=alt.XOffset("dist:N", sort=list(DIST_COLORS)),
            y=alt.Y("prob:Q", title="probability", scale=alt.Scale(domain=[0, 1])),
            color=alt.Color(
                "dist:N", scale=alt.Scale(domain=list(DIST_COLORS), range=list(DIST_COLORS.values())), title=None
            ),
            stroke=alt.condition("datum.proposal", alt.value("black"), alt.value(None)),
            strokeWidth=alt.condition("datum.proposal", alt.value(3), alt.value(0)),
            strokeDash=alt.condition("datum.dist == 'q (draft)'", alt.value([4, 2]), alt.value([1, 0])),
            tooltip=["token:N", "dist:N", alt.Tooltip("prob:Q", format=".4f"), "proposal:N"],
        )
        .properties(height=220, padding=PADDING)
    )


def acceptance_rows(pos: Position | Node) -> list[dict]:
    verdict = acceptance_verdict(pos)
    return [
        {
            "what": "min(1, p/q)",
            "value": pos.ratio,
            "u": pos.u,
            "verdict": verdict,
            "p": pos.p,
            "q": pos.q,
            "one": 1.0,
        }
    ]


def acceptance_verdict(pos: Position | Node) -> str:
    return "accepted" if pos.u <= pos.ratio else "rejected"


def acceptance_label(pos: Position | Node) -> str:
    """The text above the u tick."""
    return f"u = {pos.u:.3f}"


def acceptance_heading(pos: Position | Node) -> tuple[str, str]:
    """The acceptance chart's title and subtitle: the verdict, and the test in numbers."""
    verdict = acceptance_verdict(pos)
    sign = "≤" if verdict == "accepted" else ">"
    return (
        f"{ORIGIN_MARKS[verdict]} {verdict.upper()}: u {sign} min(1, p/q)",
        f"u = {pos.u:.3f} {sign} min(1, {prob(pos.p)} / {prob(pos.q)}) = {prob(pos.ratio)}",
    )


def acceptance_chart(pos: Position | Node) -> alt.LayerChart:
    """The acceptance probability as a bar on [0, 1] with the uniform draw u marked: accepted iff u lands inside."""
    x_title = "acceptance probability min(1, p/q), and the uniform draw u"
    return _u_test_chart(acceptance_rows(pos), x_title, acceptance_label(pos), acceptance_heading(pos))


def block_stop_rows(pos: Position, stop: BlockStop) -> list[dict]:
    """The stop test as the acceptance chart's one row: h in place of min(1, p/q); coloured by whether the block
    kept this draft."""
    return [
        {
            "what": "h: end here",
            "value": stop.h,
            "u": stop.u,
            "verdict": stop.verdict,
            "p": pos.p,
            "q": pos.q,
            "one": 1.0,
        }
    ]


def block_stop_heading(stop: BlockStop) -> tuple[str, str]:
    """The stop test's title: whether the block kept the draft, and the test in numbers (with the weight)."""
    sign, kept = ("≤" if stop.passed else ">"), ("KEPT" if stop.kept else "NOT KEPT")
    return (
        f"{ORIGIN_MARKS[stop.verdict]} {kept} · may the block end after draft {stop.after}?",
        f"u = {stop.u:.3f} {sign} h = {prob(stop.h)} ({'passes' if stop.passed else 'fails'}); weight w = "
        f"{prob(stop.weight)}",
    )


def block_stop_chart(pos: Position, stop: BlockStop) -> alt.LayerChart:
    """Block verification's stop test after this draft: h on [0, 1] with u marked (the block keeps its longest
    prefix whose stop passes, so a failed stop can still be kept)."""
    x_title = "probability h that the block may end here, and the uniform draw u"
    return _u_test_chart(block_stop_rows(pos, stop), x_title, acceptance_label(pos), block_stop_heading(stop))


def _u_test_chart(rows: list[dict], x_title: str, label: str, heading: tuple[str, str]) -> alt.LayerChart:
    """A probability as a bar on [0, 1] beside its track, the uniform draw u as a tick with its label."""
    frame = pd.DataFrame(rows)
    x_scale = alt.Scale(domain=[0, 1])
    base = alt.Chart(frame).encode(y=alt.Y("what:N", title=None))
    track = base.mark_bar(color="#eeeeee", size=34).encode(x=alt.X("one:Q", scale=x_scale, title=None))
    bar = base.mark_bar(color=VERDICT_COLORS[rows[0]["verdict"]], size=34).encode(
        x=alt.X("value:Q", scale=x_scale, title=x_title),
        tooltip=[
            alt.Tooltip("p:Q", format=".4~g"),
            alt.Tooltip("q:Q", format=".4~g"),
            alt.Tooltip("value:Q", title=rows[0]["what"], format=".4f"),
            alt.Tooltip("u:Q", format=".4f"),
            "verdict:N",
        ],
    )
    u_mark = base.mark_tick(color="black", thickness=3, size=50).encode(
        x=alt.X("u:Q", scale=x_scale), tooltip=[alt.Tooltip("u:Q", format=".4f")]
    )
    text = base.mark_text(dy=-30, fontWeight="bold", fontSize=14).encode(
        x=alt.X("u:Q", scale=x_scale), text=alt.value(label)
    )
    return (track + bar + u_mark + text).properties(title=chart_title(*heading), height=130, padding=PADDING)


def distribution_frame(top: tuple[TokenProb, ...], chosen: int | None) -> pd.DataFrame:
    return pd.DataFrame(
        [{"token": _token_label(t.token_id, t.text), "prob": t.prob, "chosen": t.token_id == chosen} for t in top],
        columns=["token", "prob", "chosen"],
    )


def drawn_rows(top: tuple[TokenProb, ...], chosen: int | None, origin: str, mark: str = "drawn") -> list[dict]:
    """A drawn chart's rows: each top token, whether it is the one chosen, and the mark above the chosen one."""
    said = f"{ORIGIN_MARKS[origin]} {mark}".strip()
    return [
        {
            "token": _token_label(t.token_id, t.text),
            "prob": t.prob,
            "chosen": t.token_id == chosen,
            "mark": said if t.token_id == chosen else "",
        }
        for t in top
    ]


def drawn_chart(
    top: tuple[TokenProb, ...],
    chosen: int | None,
    origin: str,
    title: alt.TitleParams,
    y_title: str,
    mark: str = "drawn",
) -> alt.LayerChart:
    """Bars of a distribution; the chosen token in the origin's colour and marked with its symbol (a second cue)."""
    frame = pd.DataFrame(drawn_rows(top, chosen, origin, mark), columns=["token", "prob", "chosen", "mark"])
    base = alt.Chart(frame).encode(x=alt.X("token:N", sort=None, title="token", axis=alt.Axis(**TOKEN_AXIS_OPTIONS)))
    bars = base.mark_bar().encode(
        y=alt.Y("prob:Q", title=y_title),
        color=alt.condition("datum.chosen", alt.value(ORIGIN_COLORS[origin]), alt.value("#bdbdbd")),
        tooltip=["token:N", alt.Tooltip("prob:Q", format=".4f"), "chosen:N"],
    )
    marks = base.mark_text(dy=-10, fontWeight="bold", fontSize=14, color=ORIGIN_COLORS[origin]).encode(
        y="prob:Q", text="mark:N"
    )
    return (bars + marks).properties(title=title, height=220, padding=PADDING)


def residual_chart(r: Round, weight: float | None = None) -> alt.Chart:
    """norm(max(0, p − q)) at the rejected position (in a tree: after every child tried was rejected), with the
    sampled correction highlighted; weight: a block's, whose residual is norm(max(0, w·p − q))."""
    chosen = r.extra.token_id if r.extra else None
    return drawn_chart(
        r.residual_top, chosen, "correction", chart_title(*residual_heading(r, weight)), "residual probability"
    )


def residual_heading(r: Round, weight: float | None = None) -> tuple[str, str]:
    if weight is not None:
        return (
            "Residual norm(max(0, w·p − q))",
            f"what the target still owes after the kept drafts (their weight w = {prob(weight)}): drawn here",
        )
    if r.is_tree:
        return (
            "Residual norm(max(0, p − q))",
            "what is left after every child was rejected: the correction is drawn here",
        )
    return "Residual norm(max(0, p − q))", "where p has more mass than q: the correction is drawn here"


def bonus_chart(r: Round) -> alt.Chart:
    """p at position K+1 (free: the verify pass computed it), with the sampled bonus token highlighted."""
    chosen = r.extra.token_id if r.extra else None
    title = (
        chart_title("A leaf accepted: bonus from p", "the bonus token is drawn from p after the leaf, for free")
        if r.is_tree
        else chart_title(
            "All drafts accepted: bonus from p", "the bonus token is drawn from p at position K+1, for free"
        )
    )
    return drawn_chart(r.bonus_top, chosen, "bonus", title, "p (target)")


CACHE_STATUS = {  # what a cache slot holds, its colour and the label drawn in it
    "cached before": "#d9d9d9",
    "new, kept": ORIGIN_COLORS["accepted"],
    "new, rolled back": ORIGIN_COLORS["rejected"],
    "cropped away": "#ffffff",
}
OLD_SLOTS = 2  # cached slots shown before the round's new ones


def cache_frame(
    r: Round, has_draft: bool, before: tuple[int, int] | None = None, pending: tuple[str, ...] = ("last",)
) -> pd.DataFrame:
    """cache_rows as a frame."""
    return pd.DataFrame(cache_rows(r, has_draft, before, pending), columns=["row", "slot", "status", "label", "kv"])


def cache_rows(
    r: Round, has_draft: bool, before: tuple[int, int] | None = None, pending: tuple[str, ...] = ("last",)
) -> list[dict]:
    """One row per model and moment (before the pass, after the verify pass, after the rollback), one cell per KV slot
    from a little before the round's first new slot: what is cached, what this round added, what the rollback cut.

    before = (target, draft) lengths before the round (the previous round's lengths after rollback); by default the
    target's is worked out from its verify pass (the pending tokens + the drafts) and the draft's from its proposals
    (a tree's: from its rollback, which keeps exactly the pending tokens). pending = the texts of the tokens the pass
    reads before the drafts (a chain: the last committed token; a tree: the previous round's committed tokens)."""
    if r.is_tree:
        target_before, draft_before = (max(0, n - len(pending)) for n in (r.target_cache[1], r.draft_cache[1]))
    else:
        target_before, draft_before = max(0, r.target_cache[0] - r.proposed - 1), max(0, r.draft_cache[0] - r.proposed)
    if before:
        target_before, draft_before = before
    texts = [visible(t) for t in pending] + [visible(p.text) for p in (r.nodes or r.positions)]
    models = [("target", target_before, r.target_cache, "after the verify pass")]
    if has_draft:
        models.append(("draft", draft_before, r.draft_cache, "after drafting"))
    rows = []
    for model, start, (grown, kept), grown_label in models:
        first = max(0, start - OLD_SLOTS)
        moments = (("before the pass", start), (grown_label, grown), ("after the rollback", kept))
        for moment, length in moments:
            for slot in range(first, max(grown, start)):
                new = slot >= start
                if not new:
                    status, label = "cached before", "…" if slot == first and first > 0 else ""
                elif slot >= length:
                    status = "cropped away" if moment == "after the rollback" and slot < grown else None
                    label = "✗" if status else ""
                else:
                    status = "new, kept" if slot < kept else "new, rolled back"
                    label = texts[slot - start] if model == "target" and slot - start < len(texts) else ""
                    if status == "new, rolled back":  # a tree's many nodes: their tokens are in the tree above
                        label = "✗" if r.is_tree else f"{label} ✗"
                if status is None:
                    continue
                rows.append(
                    {"row": f"{model} · {moment}", "slot": slot - start, "status": status, "label": label, "kv": slot}
                )
    return rows


def cache_title(r: Round) -> tuple[str, str]:
    """The KV-cache chart's title and subtitle (a tree's or a chain's)."""
    return (
        "KV caches: every tree node is cropped; the path is re-read next pass"
        if r.is_tree
        else "KV caches: the rejected drafts are cropped away",
        "kept ■ blue · rolled back ✗ orange",
    )


def cache_chart(
    r: Round, has_draft: bool = True, before: tuple[int, int] | None = None, pending: tuple[str, ...] = ("last",)
) -> alt.LayerChart:
    """Each model's KV cache as a strip of slots before the pass, after it and after the rollback: the drafts the
    target rejected are cropped away (✗), so the next round starts from the committed prefix (a tree crops every
    node and re-reads the accepted path at the start of the next pass)."""
    frame = cache_frame(r, has_draft, before, pending)
    order = list(dict.fromkeys(frame["row"]))  # the rows' order: rows_order(cache_rows(...), "row")
    base = alt.Chart(frame).encode(
        x=alt.X("slot:O", title="KV slot (0 = the first one this round)", axis=alt.Axis(labelAngle=0)),
        y=alt.Y("row:N", sort=order, title=None, axis=alt.Axis(labelLimit=0, labelFontSize=14)),
    )
    cells = base.mark_rect(stroke="#555555", strokeWidth=1.5).encode(
        color=alt.Color(
            "status:N",
            title=None,
            scale=alt.Scale(domain=list(CACHE_STATUS), range=list(CACHE_STATUS.values())),
            legend=alt.Legend(orient="bottom", labelFontSize=13, labelLimit=0),
        ),
        strokeDash=alt.condition("datum.status == 'cropped away'", alt.value([4, 3]), alt.value([1, 0])),
        tooltip=["row:N", "kv:Q", "status:N", "label:N"],
    )
    labels = base.mark_text(fontSize=15, fontWeight="bold", baseline="middle", limit=68).encode(
        text="label:N",
        color=alt.condition("datum.status == 'new, kept'", alt.value("white"), alt.value("black")),
    )
    return (cells + labels).properties(
        title=chart_title(*cache_title(r)),
        height={"step": 42},  # one readable band per row, however wide the page
        width={"step": 72},
        padding=PADDING,
    )


def timing_frame(rounds: tuple[Round, ...]) -> pd.DataFrame:
    return pd.DataFrame(timing_rows(rounds, "draft") + timing_rows(rounds, "verify"), columns=["round", "phase", "ms"])


def timing_rows(rounds: tuple[Round, ...], phase: str) -> list[dict]:
    """One phase's time per round (the frame is every round's draft, then every round's verify)."""
    return [
        {"round": r.index + 1, "phase": phase, "ms": r.draft_ms if phase == "draft" else r.verify_ms} for r in rounds
    ]


def timing_chart(rounds: tuple[Round, ...]) -> alt.Chart:
    """Per round: time spent drafting vs verifying (stacked), measured on this machine."""
    return (
        alt.Chart(timing_frame(rounds), title=chart_title("Time per round: drafting vs the target's verify pass"))
        .mark_bar()
        .encode(
            x=alt.X("round:O", title="round"),
            y=alt.Y("ms:Q", title="milliseconds", stack="zero"),
            color=alt.Color(
                "phase:N",
                scale=alt.Scale(
                    domain=["draft", "verify"], range=[DIST_COLORS["q (draft)"], DIST_COLORS["p (target)"]]
                ),
            ),
            tooltip=["round:O", "phase:N", alt.Tooltip("ms:Q", format=".2f")],
        )
        .properties(height=200, padding=PADDING)
    )


def accepted_length_frame(rounds: tuple[Round, ...], k: int) -> pd.DataFrame:
    return pd.DataFrame(accepted_length_rows(rounds, k), columns=["accepted", "rounds"])


def accepted_length_rows(rounds: tuple[Round, ...], k: int) -> list[dict]:
    counts = {n: 0 for n in range(k + 1)}
    for r in rounds:
        if r.proposed:
            counts[r.accepted] = counts.get(r.accepted, 0) + 1
    return [{"accepted": n, "rounds": c} for n, c in counts.items()]


def accepted_length_chart(rounds: tuple[Round, ...], k: int) -> alt.Chart:
    """How many drafts each round kept: K means everything passed and a bonus token followed."""
    return (
        alt.Chart(accepted_length_frame(rounds, k), title=chart_title("Accepted drafts per round"))
        .mark_bar(color=ORIGIN_COLORS["accepted"])
        .encode(
            x=alt.X("accepted:O", title="drafts accepted in the round"),
            y=alt.Y("rounds:Q", title="rounds"),
            tooltip=["accepted:O", "rounds:Q"],
        )
        .properties(height=200, padding=PADDING)
    )


def suffix_prob_frame(r: Round, min_token_prob: float) -> pd.DataFrame:
    """One row per drafted token of a suffix round: its path probability and whether it cleared min_token_prob."""
    return pd.DataFrame(
        suffix_prob_rows(r, min_token_prob), columns=["draft", "path_prob", "min_token_prob", "verdict"]
    )


def suffix_prob_rows(r: Round, min_token_prob: float) -> list[dict]:
    probs = r.suffix.probs if r.suffix else ()
    rows = [
        {
            "draft": f"{i + 1} {visible(pos.text)}",
            "path_prob": p,
            "min_token_prob": min_token_prob,
            "verdict": pos.verdict,
        }
        for i, (pos, p) in enumerate(zip(r.positions, probs, strict=False))
    ]
    return rows


def suffix_prob_title(min_token_prob: float) -> tuple[str, str]:
    return (
        "Each draft's path probability against min_token_prob",
        f"the walk stops before a token whose path probability would fall below {min_token_prob:g} (dashed)",
    )


def suffix_prob_chart(r: Round, min_token_prob: float) -> alt.LayerChart | None:
    """Suffix decoding's walk: each drafted token's path probability (counts' ratios multiplied) against the
    min_token_prob line the walk stops under; None when the round drafted nothing (or records no match)."""
    frame = suffix_prob_frame(r, min_token_prob)
    if frame.empty:
        return None
    order = list(frame["draft"])
    y = alt.Y("path_prob:Q", title="path probability (trie counts)", scale=alt.Scale(domain=[0, 1]))
    bars = (
        alt.Chart(frame)
        .mark_bar(color=Q_COLOR)
        .encode(
            x=alt.X("draft:N", sort=order, title="drafted token, in order", axis=alt.Axis(labelAngle=0)),
            y=y,
            tooltip=[
                "draft:N",
                alt.Tooltip("path_prob:Q", title="path probability", format=".4f"),
                alt.Tooltip("min_token_prob:Q", title="min_token_prob", format=".3g"),
                "verdict:N",
            ],
        )
    )
    line = (
        alt.Chart(pd.DataFrame([{"min_token_prob": min_token_prob}]))
        .mark_rule(color="black", strokeDash=[5, 3], size=2)
        .encode(y=alt.Y("min_token_prob:Q"), tooltip=[alt.Tooltip("min_token_prob:Q", format=".3g")])
    )
    title = chart_title(*suffix_prob_title(min_token_prob))
    return (bars + line).properties(title=title, height=200, padding=PADDING)
