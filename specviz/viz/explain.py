"""One sentence of why, with the numbers, for each phase of a round (pure text and HTML)."""

from __future__ import annotations

import html

from specviz.core.trace import Position, Round
from specviz.viz.text import visible

DRAFT_BOX = "border:1px solid #6a1b9a;padding:.2rem .45rem;margin:0 .1rem;font-family:monospace"


def _tok(text: str) -> str:
    return f"'{html.escape(visible(text))}'"


def verify_html(r: Round) -> str:
    """The K drafts plus the pending token go through the target together: one pass, K+1 distributions."""
    boxes = "".join(f'<span style="{DRAFT_BOX}">{html.escape(visible(p.text))}</span>' for p in r.positions)
    return (
        f'<div style="border:3px solid #6a1b9a;border-radius:.5rem;padding:.5rem;display:inline-block">'
        f'<div style="font-weight:bold;color:#6a1b9a">ONE target forward pass · {r.verify_ms:.1f} ms</div>'
        f'<div style="margin:.4rem 0">[last committed token] {boxes}</div>'
        f"<div>→ p<sub>1</sub> … p<sub>{r.proposed + 1}</sub>: the target's distribution at each of the "
        f"{r.proposed + 1} positions, all at once (drafting took {r.draft_ms:.1f} ms).</div></div>"
    )


def judge_sentence(pos: Position) -> str:
    if pos.u <= pos.ratio:
        return (
            f"**Accepted** {_tok(pos.text)}: p = {pos.p:.3f}, q = {pos.q:.3f}, so it is kept with probability "
            f"min(1, p/q) = {pos.ratio:.3f}; the draw u = {pos.u:.3f} falls inside."
        )
    return (
        f"**Rejected** {_tok(pos.text)}: the draft was more confident than the target (q = {pos.q:.3f} > p = "
        f"{pos.p:.3f}), so it is kept only with probability {pos.ratio:.3f}, and u = {pos.u:.3f} is above that. "
        "Every later draft is discarded."
    )


def resolve_sentence(r: Round) -> str:
    extra = r.extra
    if extra.kind == "correction":
        rejected = next(p for p in r.positions if p.verdict == "rejected")
        return (
            f"The correction {_tok(extra.text)} is drawn from the residual norm(max(0, p − q)) at position "
            f"{rejected.index + 1}, which only holds tokens the target likes more than the draft did: its p is "
            f"{extra.p:.3f} and its residual probability {extra.prob:.3f} (u = {extra.u:.3f}). This is what makes "
            "the output follow p exactly."
        )
    if extra.kind == "bonus":
        return (
            f"All {r.proposed} drafts passed, so the target's pass already holds p at position {r.proposed + 1}: the "
            f"bonus token {_tok(extra.text)} is drawn from it (p = {extra.p:.3f}, u = {extra.u:.3f}) for free."
        )
    return f"Plain decoding: the target draws {_tok(extra.text)} from p (p = {extra.p:.3f}, u = {extra.u:.3f})."


def commit_sentence(r: Round) -> str:
    kept = len(r.committed)
    stop = {"eos": " The end-of-sequence token ends the run.", "max_new_tokens": " The length limit ends the run."}
    text = (
        f"Committed {kept} token(s) for one target pass. The target's cache goes from {r.target_cache[0]} to "
        f"{r.target_cache[1]} tokens"
    )
    if r.draft_cache != (0, 0):
        text += f", the draft's from {r.draft_cache[0]} to {r.draft_cache[1]}"
    return (
        text
        + ": rejected drafts leave no trace; the newest token is read at the start of the next round."
        + stop.get(r.stop or "", "")
    )


BF16_GREEDY_NOTE = (
    "a verify pass over K + 1 tokens rounds differently from one-token steps, so where the target's top two tokens "
    "nearly tie, greedy output can part from plain decoding; in float32 it matches token for token."
)

ALPHA_HELP = (
    "α = accepted drafts / drafts judged: the chance that a draft token passes the accept test, the α of the paper's "
    "formulas (at temperature 1 its expectation is Σ min(p, q)). Drafts after a rejection are never judged. vLLM's "
    "'draft acceptance rate' divides by all drafts proposed instead, so it falls as K grows."
)
