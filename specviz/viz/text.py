"""The committed text as HTML: each token coloured by origin, with its numbers in a tooltip."""

from __future__ import annotations

import re
from dataclasses import dataclass

from specviz.core.trace import ACCEPTED, Round, Trace
from specviz.viz.palette import ORIGIN_COLORS, ORIGIN_LABELS, ORIGIN_MARKS, ORIGIN_UNDERLINES

# Characters HTML or Markdown give a meaning to, written as character references: decoded to the same characters in
# both, they can open no tag, link, image, heading, emphasis or code; a newline as &#10; can end no HTML block (a
# blank line would, and what followed it would be read as Markdown).
_INERT = str.maketrans({c: f"&#{ord(c)};" for c in "&<>\"'\\`*_{}[]()#+-.!|~:\r\n"})


def literal(text: str) -> str:
    """Text from a user, a trace or a server, made inert for both HTML and Markdown: it shows as exactly these
    characters wherever Streamlit renders it (st.markdown with or without HTML, st.error, a title attribute)."""
    return str(text).translate(_INERT)


# The user's turn in the chat templates specviz's instruct pairs use: ChatML (SmolLM2, Qwen2.5) and Llama 3's.
_USER_TURNS = (
    re.compile(r"<\|im_start\|>user\n(.*?)(?:<\|im_end\|>|$)", re.S),
    re.compile(r"<\|start_header_id\|>user<\|end_header_id\|>\n\n(.*?)(?:<\|eot_id\|>|$)", re.S),
)


def user_message(prompt: str) -> str:
    """What a person typed, out of a prompt an instruct pair's chat template wrapped: its last user turn (every such
    prompt opens with the same system turn, so its start names none of them); any other prompt as it is."""
    for turn in _USER_TURNS:
        found = turn.findall(prompt)
        if found:
            return found[-1].strip()
    return prompt


def prob(x: float) -> str:
    """A probability as printed: three decimals, or two significant digits in scientific notation below 0.0005, so a
    token that was sampled never reads "0.000" (q = 3.2e-05); an exact zero reads 0."""
    if x == 0:
        return "0"
    return f"{x:.3f}" if abs(x) >= 0.0005 else f"{x:.1e}"


def token_tooltips(trace: Trace, n_rounds: int | None = None) -> list[str]:
    """Per output token: p(x), q(x), min(1, p/q) and u for accepted drafts; how it was drawn for the others."""
    tips = []
    for r in trace.rounds[:n_rounds]:
        for pos in r.positions:
            if pos.accepted:
                tips.append(
                    f"accepted draft · p(x)={prob(pos.p)} · q(x)={prob(pos.q)} · min(1,p/q)={prob(pos.ratio)} · "
                    f"u={pos.u:.3f}"
                )
        if r.extra:
            source = {"correction": "residual", "bonus": "p at position K+1", "target": "p"}[r.extra.kind]
            tips.append(
                f"{r.extra.kind} · drawn from the {source}: prob {prob(r.extra.prob)} · "
                f"p(x)={prob(r.extra.p)} · u={r.extra.u:.3f}"
            )
    return tips


def span(text: str, origin: str, tooltip: str = "") -> str:
    colour = ORIGIN_COLORS[origin]
    style = f"color:{colour};"
    if origin in ORIGIN_UNDERLINES:  # colour plus an underline style: readable without colour vision
        style += (
            f"text-decoration:underline {ORIGIN_UNDERLINES[origin]} {colour};text-decoration-thickness:2px;"
            "text-underline-offset:3px;text-decoration-skip-ink:none;"
        )
    return f'<span class="tok tok-{origin}" style="{style}" title="{literal(tooltip)}">{literal(text)}</span>'


TEXT_OPEN = '<div class="specviz-text" style="white-space:pre-wrap;font-family:monospace;line-height:1.6">'


def trace_html(trace: Trace, n_rounds: int | None = None) -> str:
    """Prompt plus the output of the first n_rounds rounds (all by default); one span per output token."""
    spans = [span(trace.prompt, "prompt", "prompt")]
    tokens = trace.tokens(n_rounds)
    spans += [span(text, origin, tip) for (_, text, origin), tip in zip(tokens, token_tooltips(trace, n_rounds))]
    return TEXT_OPEN + "".join(spans) + "</div>"


class TextParts(str):
    """The committed text after `rounds` rounds as one HTML string (what the page draws), that also knows its parts:
    `before` + the first `rounds` of round_spans(trace) + `after`, so a player bundle stores each round's spans once
    and a step only how many rounds it shows."""

    before: str
    rounds: int
    after: str

    def __new__(cls, before: str, spans: list[str], rounds: int, after: str):
        text = super().__new__(cls, before + "".join(spans[:rounds]) + after)
        text.before, text.rounds, text.after = before, rounds, after
        return text


def round_spans(trace: Trace) -> list[str]:
    """Each round's output tokens as HTML spans (trace_html joins them after the prompt's)."""
    tips = iter(token_tooltips(trace))
    out = []
    for r in trace.rounds:
        tokens = [(pos.text, ACCEPTED) for pos in r.positions if pos.accepted]
        tokens += [(r.extra.text, r.extra.kind)] if r.extra else []
        out.append("".join(span(text, origin, next(tips)) for text, origin in tokens))
    return out


def committed_html(trace: Trace, spans: list[str], rounds: int, before: str = "", after: str = "") -> TextParts:
    """trace_html(trace, rounds) from its parts (spans = round_spans(trace)), inside `before` and `after`."""
    return TextParts(before + TEXT_OPEN + span(trace.prompt, "prompt", "prompt"), spans, rounds, "</div>" + after)


@dataclass(frozen=True)
class CommittedText:
    """The committed text after `rounds` rounds by its parts only (a player bundle's: it stores each round's spans
    once and a step how many it shows, so no step joins the text so far)."""

    before: str
    rounds: int
    after: str


def committed_parts(trace: Trace, spans: list[str], rounds: int, before: str = "", after: str = "") -> CommittedText:
    """committed_html's parts, without the joined text."""
    return CommittedText(before + TEXT_OPEN + span(trace.prompt, "prompt", "prompt"), rounds, "</div>" + after)


def legend_html(origins: tuple[str, ...] = (ACCEPTED, "correction", "bonus")) -> str:
    """Each origin's colour, underline and mark, so the legend works in grey scale too."""
    return " &nbsp; ".join(span(f"{ORIGIN_MARKS[o]} {ORIGIN_LABELS[o]}", o) for o in origins)


def proposals_html(r: Round) -> str:
    """The round's K draft tokens as chips that appear one after another, each with its q."""
    chips = []
    for pos in r.positions:
        delay = 0.25 * pos.index
        chips.append(
            f'<span class="chip" style="animation-delay:{delay:.2f}s" title="q(x) = {pos.q:.4g}">'
            f"<b>{literal(visible(pos.text))}</b><br><small>q = {prob(pos.q)}</small></span>"
        )
    return CHIP_CSS + '<div class="chips">' + "".join(chips) + "</div>"


def key_html(entries: list[tuple[str, str, str]]) -> str:
    """A chart's key as one line of text: each entry's symbols in its colour, then its words (readable in grey)."""
    items = [
        f'<span style="white-space:nowrap"><b style="color:{colour}">{literal(symbol)}</b> {literal(words)}</span>'
        for colour, symbol, words in entries
    ]
    return '<div class="chart-key" style="margin:-.3rem 0 .6rem">' + " &nbsp;·&nbsp; ".join(items) + "</div>"


def visible(text: str) -> str:
    """Whitespace made visible, so a draft of a space or newline can be seen."""
    return text.replace(" ", "␣").replace("\n", "↵").replace("\t", "⇥") or "∅"


CHIP_CSS = """<style>
.chips{display:flex;flex-wrap:wrap;gap:.4rem;margin:.3rem 0}
.chip{display:inline-block;padding:.25rem .55rem;border:2px solid #CC79A7;border-radius:.4rem;font-family:monospace;
text-align:center;opacity:0;animation:chipin .35s ease forwards}
@keyframes chipin{from{opacity:0;transform:translateY(-6px)}to{opacity:1;transform:none}}
</style>"""


def phase_strip_html(current: str, titles: dict[str, str]) -> str:
    """The five phases of a round in a row, the current one marked: where in the round the lecture is. It reads as a
    route, not as buttons (no boxes, arrows between, the default cursor): the keys and buttons below move along it."""
    cells = []
    for phase, title in titles.items():
        on = phase == current
        style = "padding:.15rem .1rem;cursor:default;" + (
            "color:#111;font-weight:bold;border-bottom:4px solid #111;" if on else "color:#666;"
        )
        label = title.split(" (")[0]
        cells.append(
            f'<span class="phase{" phase-on" if on else ""}" style="{style}">{"▶ " if on else ""}{label}</span>'
        )
    arrow = '<span class="phase-sep" aria-hidden="true" style="color:#999;padding:0 .5rem">→</span>'
    return (
        '<div class="phase-strip" style="display:flex;flex-wrap:wrap;'
        'align-items:baseline;margin:.4rem 0 .6rem;user-select:none">' + arrow.join(cells) + "</div>"
    )


def plural(count: int, noun: str) -> str:
    """'1 draft', '3 drafts'."""
    return f"{count} {noun}{'' if count == 1 else 's'}"
