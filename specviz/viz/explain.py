"""One sentence of why, with the numbers, for each phase of a round (pure text and HTML)."""

from __future__ import annotations

import html

from specviz.core.trace import Position, Round, Trace
from specviz.viz.text import visible

DRAFT_BOX = "border:1px solid #333333;padding:.2rem .45rem;margin:0 .1rem;font-family:monospace"


def _tok(text: str) -> str:
    return f"'{html.escape(visible(text))}'"


def verify_html(r: Round) -> str:
    """The K drafts plus the pending token go through the target together: one pass, K+1 distributions."""
    boxes = "".join(f'<span style="{DRAFT_BOX}">{html.escape(visible(p.text))}</span>' for p in r.positions)
    return (
        f'<div style="border:3px solid #333333;border-radius:.5rem;padding:.5rem;display:inline-block">'
        f'<div style="font-weight:bold;color:#333333">ONE target forward pass · {r.verify_ms:.1f} ms</div>'
        f'<div style="margin:.4rem 0">[last committed token] {boxes}</div>'
        f"<div>→ p<sub>1</sub> … p<sub>{r.proposed + 1}</sub>: the target's distribution at each of the "
        f"{r.proposed + 1} positions, all at once (drafting took {r.draft_ms:.1f} ms).</div></div>"
    )


def draft_sentence(trace: Trace, r: Round) -> str:
    """What drafting cost this round: forward passes of the draft model, or a lookup that runs no model at all."""
    if trace.settings.method == "ngram":
        if not r.proposed:
            return (
                f"The n-gram lookup found no earlier match for the last few tokens, so it proposes nothing and the "
                f"target decodes one token this round ({r.draft_ms:.1f} ms, no model run)."
            )
        return (
            f"The n-gram lookup copies {r.proposed} token(s) that followed an earlier occurrence of the last few "
            f"tokens: a search of the text, no model run ({r.draft_ms:.1f} ms):"
        )
    return f"The draft model proposes {r.proposed} token(s), one forward pass each ({r.draft_ms:.1f} ms in all):"


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
    "tie within bfloat16's resolution, greedy output can part from plain decoding (sampling stays exact relative to "
    "the verify pass's own numbers). In float32 the same can happen only at far closer ties, which are rare."
)

ALPHA_HELP = (
    "α = accepted drafts / drafts judged: the chance that a draft token passes the accept test, the α of the paper's "
    "formulas. Given the text so far, its expectation is Σ min(p, q) over the processed p and q at whatever "
    "temperature, top-k or top-p is set (at T = 0, whether the two argmaxes agree); the measured α is a ratio "
    "estimator of it. Drafts after a rejection are never judged. vLLM's 'draft acceptance rate' divides by all drafts "
    "proposed instead, so it falls as K grows."
)
