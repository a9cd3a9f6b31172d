"""The translation of a round drafted across tokenizers (TLI, SLEM): the draft's tokens, their text, the target's
tokens for it, what fell outside the shared tokens, and how the draft realigned after the commit. Pure HTML, drawn by
the round page and the player alike (viz/step_view.py)."""

from __future__ import annotations

from specviz import methods
from specviz.core.trace import Crossing, Round
from specviz.viz.explain import DRAFT_BOX
from specviz.viz.palette import Q_COLOR
from specviz.viz.text import literal, prob, visible

OUTSIDE_BOX = DRAFT_BOX + ";border-style:dashed;color:#777777"  # a draft token the target cannot spell
ROW = '<div style="margin:.25rem 0">'


def _boxes(texts, outside=()) -> str:
    """Token chips; a chip outside the intersection dashed and grey, with a title saying so."""
    out = []
    for i, text in enumerate(texts):
        away = i < len(outside) and outside[i]
        style, title = (OUTSIDE_BOX, ' title="not a token the target spells"') if away else (DRAFT_BOX, "")
        out.append(f'<span style="{style}"{title}>{literal(visible(text))}</span>')
    return "".join(out) or "<i>none</i>"


def _masked(c: Crossing) -> str:
    """TLI: per position, the mass outside the intersection that was masked, and its most likely tokens."""
    rows = []
    for i, (lost, top) in enumerate(zip(c.lost, c.masked)):
        tokens = ", ".join(f"{literal(visible(t.text))} {prob(t.prob)}" for t in top) or "none"
        bar = f'<span style="display:inline-block;width:{lost * 6:.2f}rem;height:.6rem;background:{Q_COLOR}"></span>'
        rows.append(f"<li>draft {i + 1}: {bar} {prob(lost)} of q masked (most likely: {tokens})</li>")
    return f'<ul style="margin:.2rem 0">{"".join(rows)}</ul>' if rows else ""


def crossing_html(r: Round, meta: dict) -> str:
    """The round's translation between the two tokenizers; empty for a round drafted over one tokenizer."""
    c = r.crossing
    if c is None:
        return ""
    shared = meta.get("intersection")
    size = f"{shared:,} of the target's {meta.get('target_vocab', 0):,} tokens" if shared else "the shared tokens"
    if c.method == methods.TLI:
        how = (
            "TLI: the draft speaks its own tokenizer; it may only propose the tokens both spell the same way "
            f"({size}), so q is masked to them and renormalised, and each draft is judged by min(1, p/q) as usual."
        )
    else:
        how = (
            "SLEM: the draft wrote text in its own tokens; the text is re-tokenized with the target's tokenizer and "
            "the target's tokens are judged by exact match (one-hot q)."
        )
    seam = "<br>The draft's text merged into the last committed token, so it was re-tokenized alone." if c.seam else ""
    realigned = (
        f"After the commit the draft realigned: it kept {c.kept} of its tokens, dropped {c.dropped} where they "
        f"disagreed with the committed text, and reads {c.fresh} anew."
        if c.dropped
        else f"After the commit the draft kept its {c.kept} tokens and reads {c.fresh} new one(s)."
    )
    text = literal(visible("".join(c.draft_texts)))
    return (
        f'<div style="margin:.3rem 0">{how}'
        f"{ROW}draft's tokens: {_boxes(c.draft_texts, c.outside)}</div>"
        f"{ROW}their text: <code>{text}</code></div>"
        f"{ROW}target's tokens: {_boxes(c.target_texts)}</div>"
        f"{_masked(c)}{seam}{ROW}{realigned}</div></div>"
    )
