"""Where each draft of a feature head came from: the draft phase's picture of EAGLE's central idea.

A head drafts from the target's hidden states, not from tokens alone. Its first draft of a round reads the
target's real feature of the last committed rows; every later draft of an EAGLE chain reads the feature the head
itself predicted one step before (the extrapolation that gives EAGLE its name); independent parallel heads all read
the same target feature, each guessing one position further ahead. The page shows one line per draft,
appearing one after another: which feature went in (the target's, solid; the head's own, dashed), with which
token's embedding, and the draft it gave with its q.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from specviz.core.trace import Trace
from specviz.viz.palette import P_COLOR, Q_COLOR
from specviz.viz.text import literal, prob, visible


@dataclass(frozen=True)
class HeadFlow:
    """How one kind of head turns features into drafts: what its first and later drafts read, in short (on each
    line) and in words (in the key under the lines)."""

    head: str  # the module that runs, short: "head"
    first_feature: str  # the target's feature the round's first draft reads, short: "target's f"
    later_feature: str  # what every later draft reads, short ("" when each draft reads the target's feature again)
    turns_into_q: str  # what makes q out of the predicted feature, short
    key: str  # the same in words
    sentence: str  # how it drafts, after "The <head> proposes K token(s), "
    pairs_embedding: bool = True  # each step also reads the embedding of the token before the one it drafts
    proposes: str = "proposes"  # the verb after the head's name ("propose" for heads in the plural)
    each_head: str = ""  # each line names its own head, numbered from 0 ("head": head 0, head 1, ...); "": `head`
    short_of_k: str = ""  # why a round drafts fewer than K that the token budget does not explain, with {k}


LESSON = Path(__file__).resolve().parents[2] / "assets" / "lessons" / "feature_flows.json"
FLOWS = {  # registry method -> how its head drafts, the prose kept with the other lessons' (assets/lessons/)
    name: HeadFlow(**flow)
    for name, flow in json.loads(LESSON.read_text(encoding="utf-8")).items()
    if not name.startswith("_")
}


@dataclass(frozen=True)
class FeatureStep:
    """One draft: the feature it read (and whose), the token whose embedding went in with it, and what came out."""

    index: int  # 1-based draft position
    feature: str  # the feature that went in, in words
    from_target: bool  # the target's real feature (True) or the head's own prediction (False)
    token_in: str | None  # the token whose embedding goes in with the feature, as shown (None: the head reads none)
    draft: str  # the drafted token
    q: float  # its probability under the head's q


def feature_steps(flow: HeadFlow, trace: Trace, round_index: int) -> list[FeatureStep]:
    """The round's drafts as the head made them. The first reads the target's feature of the row before the last
    committed token (the row whose p drew it) with that token's embedding; each later one reads what came before."""
    last, row_before = last_two_tokens(trace, round_index)
    steps, token_in = [], last
    for i, pos in enumerate(trace.rounds[round_index].positions):
        first = i == 0 or not flow.later_feature
        feature = f"{flow.first_feature}({row_before})" if first else f"{flow.later_feature}{i}"
        steps.append(FeatureStep(i + 1, feature, first, token_in if flow.pairs_embedding else None, pos.text, pos.q))
        token_in = f"‘{visible(pos.text)}’"
    return steps


def last_two_tokens(trace: Trace, round_index: int) -> tuple[str, str]:
    """The last two committed tokens before a round, as the page names them (quoted, or where in the prompt)."""
    texts = [f"‘{visible(text)}’" for _, text, _ in trace.tokens(round_index)]
    prompt = ["the 2nd-last prompt token", "the last prompt token"]
    return tuple((prompt + texts)[-1:-3:-1])  # (last, the one before)


FLOW_CSS = """<style>
.flow{display:flex;flex-direction:column;gap:.35rem;margin:.4rem 0 .8rem}
.flow-step{display:flex;flex-wrap:wrap;align-items:center;gap:.3rem;opacity:0;animation:flowin .4s ease forwards}
.flow-box{padding:.15rem .45rem;border-radius:.35rem}
.flow-token{font-family:monospace}
.flow-key{font-size:.9em;color:#555555}
@keyframes flowin{from{opacity:0;transform:translateX(-8px)}to{opacity:1;transform:none}}
@media (prefers-reduced-motion: reduce){.flow-step{animation:none;opacity:1}}
</style>"""


def flow_html(flow: HeadFlow, steps: list[FeatureStep]) -> str:
    """One line per draft, each appearing after the one before: feature + embedding → head → feature → q → draft."""
    lines = []
    for s in steps:
        border = f"2px solid {P_COLOR}" if s.from_target else f"2px dashed {Q_COLOR}"
        whose = "target" if s.from_target else "head"
        embedding = (
            ""
            if s.token_in is None
            else f' + <span class="flow-box" style="border:1px solid #757575">emb({literal(s.token_in)})</span>'
        )
        lines.append(
            f'<div class="flow-step" style="animation-delay:{0.35 * (s.index - 1):.2f}s">'
            f"<b>{s.index}.</b>"
            f'<span class="flow-box" style="border:{border}" title="{whose}">{literal(s.feature)}</span>{embedding}'
            f" → {literal(f'{flow.each_head} {s.index - 1}' if flow.each_head else flow.head)} → ĝ{s.index} → "
            f"{literal(flow.turns_into_q)} → "
            f'<span class="flow-box" style="border:2px solid {Q_COLOR}">'
            f'<b class="flow-token">{literal(visible(s.draft))}</b> '
            f"q = {prob(s.q)}</span></div>"
        )
    borders = "solid: the target's feature"
    if not all(s.from_target for s in steps):
        borders += " · dashed: the head's own"
    key = f'<div class="flow-key">{literal(flow.key)} ({borders})</div>'
    return FLOW_CSS + '<div class="flow">' + "".join(lines) + key + "</div>"
