"""Altair charts of one round and of a run, built from the trace alone (pure: no streamlit, no models)."""

from __future__ import annotations

import altair as alt
import pandas as pd

from specviz.core.trace import Position, Round, TokenProb
from specviz.viz.palette import ORIGIN_COLORS
from specviz.viz.text import visible

DIST_COLORS = {"q (draft)": "#ef6c00", "p (target)": "#6a1b9a"}
VERDICT_COLORS = {"accepted": ORIGIN_COLORS["accepted"], "rejected": ORIGIN_COLORS["correction"]}
TOP_SHOWN = 6


def _token_label(token_id: int, text: str) -> str:
    return f"{visible(text)} #{token_id}"


def pq_frame(pos: Position) -> pd.DataFrame:
    """Long frame of q and p over the proposal and the top tokens of each; unknown values (outside a top-10) are NaN."""
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
    return pd.DataFrame(rows)


def pq_chart(pos: Position) -> alt.Chart:
    """Paired bars of q and p over the top tokens, the proposal outlined: the ratio p/q is read off the pair."""
    frame = pq_frame(pos)
    order = list(dict.fromkeys(frame["token"]))
    return (
        alt.Chart(frame, title=f"Position {pos.index + 1}: q and p of '{visible(pos.text)}' (outlined) and top tokens")
        .mark_bar()
        .encode(
            x=alt.X("token:N", sort=order, title="token", axis=alt.Axis(labelAngle=0)),
            xOffset=alt.XOffset("dist:N", sort=list(DIST_COLORS)),
            y=alt.Y("prob:Q", title="probability", scale=alt.Scale(domain=[0, 1])),
            color=alt.Color(
                "dist:N", scale=alt.Scale(domain=list(DIST_COLORS), range=list(DIST_COLORS.values())), title=None
            ),
            stroke=alt.condition("datum.proposal", alt.value("black"), alt.value(None)),
            strokeWidth=alt.condition("datum.proposal", alt.value(2), alt.value(0)),
            tooltip=["token:N", "dist:N", alt.Tooltip("prob:Q", format=".4f"), "proposal:N"],
        )
        .properties(height=220)
    )


def acceptance_frame(pos: Position) -> pd.DataFrame:
    verdict = "accepted" if pos.u <= pos.ratio else "rejected"
    return pd.DataFrame(
        [
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
    )


def acceptance_chart(pos: Position) -> alt.LayerChart:
    """The acceptance probability as a bar on [0, 1] with the uniform draw u marked: accepted iff u lands inside."""
    frame = acceptance_frame(pos)
    verdict = frame["verdict"][0]
    x_scale = alt.Scale(domain=[0, 1])
    base = alt.Chart(frame).encode(y=alt.Y("what:N", title=None))
    track = base.mark_bar(color="#eeeeee", size=34).encode(x=alt.X("one:Q", scale=x_scale, title=None))
    bar = base.mark_bar(color=VERDICT_COLORS[verdict], size=34).encode(
        x=alt.X("value:Q", scale=x_scale, title="acceptance probability min(1, p/q), and the uniform draw u"),
        tooltip=[
            alt.Tooltip("p:Q", format=".4f"),
            alt.Tooltip("q:Q", format=".4f"),
            alt.Tooltip("value:Q", title="min(1,p/q)", format=".4f"),
            alt.Tooltip("u:Q", format=".4f"),
            "verdict:N",
        ],
    )
    u_mark = base.mark_tick(color="black", thickness=3, size=50).encode(
        x=alt.X("u:Q", scale=x_scale), tooltip=[alt.Tooltip("u:Q", format=".4f")]
    )
    label = base.mark_text(dy=-30, fontWeight="bold").encode(
        x=alt.X("u:Q", scale=x_scale), text=alt.value(f"u = {pos.u:.3f}")
    )
    sign = "≤" if verdict == "accepted" else ">"
    title = f"{verdict.upper()}: u = {pos.u:.3f} {sign} min(1, {pos.p:.3f} / {pos.q:.3f}) = {pos.ratio:.3f}"
    return (track + bar + u_mark + label).properties(title=title, height=110)


def distribution_frame(top: tuple[TokenProb, ...], chosen: int | None) -> pd.DataFrame:
    return pd.DataFrame(
        [{"token": _token_label(t.token_id, t.text), "prob": t.prob, "chosen": t.token_id == chosen} for t in top],
        columns=["token", "prob", "chosen"],
    )


def _drawn_chart(top: tuple[TokenProb, ...], chosen: int | None, colour: str, title: str, y_title: str) -> alt.Chart:
    frame = distribution_frame(top, chosen)
    return (
        alt.Chart(frame, title=title)
        .mark_bar()
        .encode(
            x=alt.X("token:N", sort=None, title="token", axis=alt.Axis(labelAngle=0)),
            y=alt.Y("prob:Q", title=y_title),
            color=alt.condition("datum.chosen", alt.value(colour), alt.value("#bdbdbd")),
            tooltip=["token:N", alt.Tooltip("prob:Q", format=".4f"), "chosen:N"],
        )
        .properties(height=200)
    )


def residual_chart(r: Round) -> alt.Chart:
    """norm(max(0, p − q)) at the rejected position, with the sampled correction highlighted."""
    chosen = r.extra.token_id if r.extra else None
    return _drawn_chart(
        r.residual_top,
        chosen,
        ORIGIN_COLORS["correction"],
        "Residual norm(max(0, p − q)): where p has more mass than q; the correction is drawn here",
        "residual probability",
    )


def bonus_chart(r: Round) -> alt.Chart:
    """p at position K+1 (free: the verify pass computed it), with the sampled bonus token highlighted."""
    chosen = r.extra.token_id if r.extra else None
    return _drawn_chart(
        r.bonus_top,
        chosen,
        ORIGIN_COLORS["bonus"],
        "All drafts accepted: the bonus token is drawn from p at position K+1",
        "p (target)",
    )


def cache_frame(r: Round, has_draft: bool) -> pd.DataFrame:
    rows = [("target", "after the verify pass", r.target_cache[0]), ("target", "after rollback", r.target_cache[1])]
    if has_draft:
        rows += [("draft", "after drafting", r.draft_cache[0]), ("draft", "after rollback", r.draft_cache[1])]
    return pd.DataFrame(rows, columns=["model", "moment", "tokens"])


def cache_chart(r: Round, has_draft: bool = True) -> alt.Chart:
    """Both KV caches before and after being cropped back to the committed prefix."""
    frame = cache_frame(r, has_draft)
    return (
        alt.Chart(frame, title="KV cache lengths: rejected drafts are cropped away")
        .mark_bar()
        .encode(
            y=alt.Y("model:N", title=None),
            yOffset=alt.YOffset("moment:N"),
            x=alt.X("tokens:Q", title="tokens held in the KV cache"),
            color=alt.Color(
                "moment:N", title=None, scale=alt.Scale(range=["#90a4ae", "#37474f", "#ffb74d", "#e65100"])
            ),
            tooltip=["model:N", "moment:N", "tokens:Q"],
        )
        .properties(height=140)
    )


def timing_frame(rounds: tuple[Round, ...]) -> pd.DataFrame:
    rows = [{"round": r.index + 1, "phase": "draft", "ms": r.draft_ms} for r in rounds]
    rows += [{"round": r.index + 1, "phase": "verify", "ms": r.verify_ms} for r in rounds]
    return pd.DataFrame(rows, columns=["round", "phase", "ms"])


def timing_chart(rounds: tuple[Round, ...]) -> alt.Chart:
    """Per round: time spent drafting vs verifying (stacked), measured on this machine."""
    return (
        alt.Chart(timing_frame(rounds), title="Time per round: drafting vs the target's verify pass")
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
        .properties(height=200)
    )


def accepted_length_frame(rounds: tuple[Round, ...], k: int) -> pd.DataFrame:
    counts = {n: 0 for n in range(k + 1)}
    for r in rounds:
        if r.proposed:
            counts[r.accepted] = counts.get(r.accepted, 0) + 1
    return pd.DataFrame({"accepted": list(counts), "rounds": list(counts.values())})


def accepted_length_chart(rounds: tuple[Round, ...], k: int) -> alt.Chart:
    """How many drafts each round kept: K means everything passed and a bonus token followed."""
    return (
        alt.Chart(accepted_length_frame(rounds, k), title="Accepted drafts per round")
        .mark_bar(color=ORIGIN_COLORS["accepted"])
        .encode(
            x=alt.X("accepted:O", title="drafts accepted in the round"),
            y=alt.Y("rounds:Q", title="rounds"),
            tooltip=["accepted:O", "rounds:Q"],
        )
        .properties(height=200)
    )
