"""The committed text as HTML: each token coloured by origin, with its numbers in a tooltip."""

from __future__ import annotations

import html

from specviz.core.trace import ACCEPTED, Trace
from specviz.viz.palette import ORIGIN_COLORS, ORIGIN_LABELS


def token_tooltips(trace: Trace) -> list[str]:
    """Per output token: p(x), q(x), min(1, p/q) and u for accepted drafts; how it was drawn for the others."""
    tips = []
    for r in trace.rounds:
        for pos in r.positions:
            if pos.accepted:
                tips.append(f"accepted draft · p(x)={pos.p:.3f} · q(x)={pos.q:.3f} · min(1,p/q)={pos.ratio:.3f} · u={pos.u:.3f}")
        if r.extra:
            source = {"correction": "residual", "bonus": "p at position K+1", "target": "p"}[r.extra.kind]
            tips.append(f"{r.extra.kind} · drawn from the {source}: prob {r.extra.prob:.3f} · p(x)={r.extra.p:.3f} · u={r.extra.u:.3f}")
    return tips


def span(text: str, origin: str, tooltip: str = "") -> str:
    colour = ORIGIN_COLORS[origin]
    style = f"color:{colour};" + ("" if origin in ("prompt", "target") else f"border-bottom:2px solid {colour};")
    return f'<span class="tok tok-{origin}" style="{style}" title="{html.escape(tooltip)}">{html.escape(text)}</span>'


def trace_html(trace: Trace) -> str:
    """Prompt plus output in a pre-wrapped block; one span per output token."""
    spans = [span(trace.prompt, "prompt", "prompt")]
    spans += [span(text, origin, tip) for (_, text, origin), tip in zip(trace.tokens(), token_tooltips(trace))]
    return '<div class="specviz-text" style="white-space:pre-wrap;font-family:monospace;line-height:1.6">' + "".join(spans) + "</div>"


def legend_html(origins: tuple[str, ...] = (ACCEPTED, "correction", "bonus")) -> str:
    return " ".join(span(f"■ {ORIGIN_LABELS[o]}", o) for o in origins)
