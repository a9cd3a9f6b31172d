"""What one step of a run shows, as data: the one source of truth for the round page and the in-browser player.

`step_view(trace, cursor, options)` returns a frozen StepView: the line that says where the lecture is, and the
step's blocks in display order (Markdown sentences, HTML fragments already made inert by viz.text.literal, Altair
charts already styled for the view, metrics), each with its place (the main column, one half of a pair, the tree or
the column beside it) and its row. The page draws a StepView with Streamlit (ui.step_render); the player bundle
(viz.player_bundle) turns the same blocks into HTML and Vega-Lite specs, so both look the same.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from specviz import methods
from specviz.core.lazy import lazy
from specviz.core.trace import Node, Position, Round, Totals, Trace
from specviz.core.verify import BLOCK
from specviz.viz import chart_templates, feature_flow, run_notes, steps
from specviz.viz import round_charts as charts
from specviz.viz import tree_charts as trees
from specviz.viz.block_stops import block_stops, kept_weight
from specviz.viz.crossing import crossing_html
from specviz.viz.explain import (
    ALPHA_HELP,
    block_judge_sentence,
    commit_sentence,
    draft_sentence,
    judge_sentence,
    resolve_sentence,
    suffix_source_html,
    tree_judge_sentence,
    verify_html,
    verify_reuse,
)
from specviz.viz.layout import lectured, readable
from specviz.viz.text import (
    committed_html,
    committed_parts,
    key_html,
    legend_html,
    literal,
    phase_strip_html,
    proposals_html,
    round_spans,
    visible,
)

if TYPE_CHECKING:
    import altair as alt
else:
    alt = lazy("altair")

# Block kinds: what a block holds and how it is drawn.
MARKDOWN = "markdown"  # a sentence in Markdown (only **bold**; user text inert through viz.text.literal)
HTML = "html"  # specviz's own HTML fragment
CAPTION = "caption"  # small print (Markdown)
HEADING = "heading"  # the phase's subheader
CHART = "chart"  # an Altair chart, styled for the view (or, for a player bundle, a ChartCall)
METRICS = "metrics"  # a row of (label, value, help) numbers
DIVIDER = "divider"  # a rule between the step and the run's totals
KINDS = (MARKDOWN, HTML, CAPTION, HEADING, CHART, METRICS, DIVIDER)

# Places: which column of its row a block sits in. A row's places decide its columns (COLUMNS).
MAIN, LEFT, RIGHT, TREE, BESIDE_TREE = "main", "left", "right", "tree", "beside_tree"
COLUMNS = {  # a row that holds these places -> its columns, left to right, and their relative widths
    frozenset({LEFT, RIGHT}): ((LEFT, 1.0), (RIGHT, 1.0)),
    frozenset({TREE, BESIDE_TREE}): ((TREE, 3.0), (BESIDE_TREE, 2.0)),
}
PLACES = (MAIN, LEFT, RIGHT, TREE, BESIDE_TREE)

# Sections: the page puts its navigation and the focus view's panel between them.
TEXT, PANEL, TOTALS = "text", "panel", "totals"  # the committed text; the phase(s) shown; the run so far in numbers
SECTIONS = (TEXT, PANEL, TOTALS)

# The focus view's committed text: at most a few lines high, scrolled to its end (the newest tokens), with the
# older ones above a scroll.
FOCUS_TEXT_CSS = (
    "<style>.focus-text{max-height:12rem;overflow-y:auto;display:flex;flex-direction:column-reverse}</style>"
)


@dataclass(frozen=True)
class ViewOptions:
    """How a step is shown: lecture mode (projector sizes), the focus view (one phase, large), and whether the
    run's times are this machine's (live) or were recorded elsewhere (a bundled or uploaded trace)."""

    lecture: bool = False
    focus: bool = False
    live: bool = False


@dataclass(frozen=True)
class Block:
    """One thing on screen: its kind, what it holds, its place in its row, its row and its section."""

    kind: str
    content: object  # str (MARKDOWN, HTML, CAPTION, HEADING), alt chart (CHART), tuple of (label, value, help)
    place: str = MAIN
    row: int = 0  # blocks of one row are consecutive; a row of LEFT/RIGHT or TREE/BESIDE_TREE places is columns
    section: str = PANEL


@dataclass(frozen=True)
class StepView:
    """A step as shown: where it is ("Round 3 of 12 · 3 · Accept or reject (position 2 of 4)"), its phase, the
    moment's URL parameters, and its blocks in display order."""

    title: str
    phase: str
    moment: dict[str, str]
    blocks: tuple[Block, ...]


@dataclass(frozen=True, eq=False)
class ChartCall:
    """A chart as the player bundle takes it: the builder and its arguments (the chart the page would draw), the
    chart as data (viz.chart_templates.Parts) and the view's styling; no Altair chart is made."""

    build: object
    args: tuple
    parts: chart_templates.Parts
    lecture: bool


class _Blocks:
    """The blocks of a view as they are built: each call adds one to the current row and section."""

    def __init__(self, options: ViewOptions, memo: dict | None = None, lazy: bool = False):
        self.options, self.items, self.row, self.section, self.memo = options, [], 0, TEXT, memo
        self.lazy = lazy

    def add(self, kind: str, content: object, place: str = MAIN) -> None:
        self.items.append(Block(kind, content, place, self.row, self.section))

    def new_row(self) -> None:
        self.row += 1

    def chart(self, build, *args, place: str = MAIN, large: bool = True) -> None:
        """The chart `build(*args)` styled as the view draws it (large=False: not made taller in lecture mode), if
        it has one to draw; with a memo, each chart is built and styled once however many steps and views show it."""
        lecture = self.options.lecture and large
        memo = {} if self.memo is None else self.memo
        key = (build.__module__, build.__qualname__, args)
        if self.lazy:  # a trace's rounds, nodes and positions by identity: hashing a Round walks all its numbers
            key = (
                build,
                tuple(_identity(a) for a in args),
            )  # the player bundle: the chart as data, bound into its kind's template by the browser
            if (key, "parts") not in memo:
                memo[key, "parts"] = chart_templates.parts(build, *args)
            if memo[key, "parts"] is not None:
                if (key, "call", lecture) not in memo:
                    memo[key, "call", lecture] = ChartCall(build, args, memo[key, "parts"], lecture)
                self.add(CHART, memo[key, "call", lecture], place)
            return
        if key not in memo:
            memo[key] = build(*args)
        if memo[key] is None:  # a builder with nothing to draw here
            return
        if (key, lecture) not in memo:
            memo[key, lecture] = styled(memo[key], lecture)
        self.add(CHART, memo[key, lecture], place)


def _identity(arg):
    """A chart argument as a memo key: the trace's own objects (alive as long as the trace) by id, the rest as is."""
    if isinstance(arg, Round | Position | Node):
        return id(arg)
    if isinstance(arg, tuple) and arg and isinstance(arg[0], Round):  # a run's rounds so far: a slice of them
        return ("rounds", id(arg[0]), id(arg[-1]), len(arg))
    return arg


def styled(chart: alt.TopLevelMixin, lecture: bool) -> alt.TopLevelMixin:
    """Every chart of a step: projector sizes in lecture mode, otherwise fitted titles and whole labels."""
    return lectured(chart) if lecture else readable(chart)


def committed_length(trace: Trace, round_index: int) -> int:
    """Tokens of the committed text when a round starts: the prompt and every earlier round's output."""
    return len(trace.prompt_ids) + sum(len(r.committed) for r in trace.rounds[:round_index])


def step_view(
    trace: Trace,
    cursor: steps.Cursor,
    options: ViewOptions = ViewOptions(),
    memo: dict | None = None,
    lazy: bool = False,
) -> StepView:
    """Everything the round page shows at this cursor below its controls, in order, as data. `memo`: a dict the
    caller keeps across calls (the player bundle) so a chart shown by many steps and views is built once. lazy: the
    charts as ChartCalls (their numbers; the player bundle), not Altair charts (the page)."""
    r = trace.rounds[cursor.round]
    step = steps.current_step(trace, cursor)
    title = f"Round {cursor.round + 1} of {len(trace.rounds)} · {steps.PHASE_TITLES[step.phase]}"
    title += steps.step_label(r, step)
    out = _Blocks(options, memo, lazy)
    done = steps.rounds_committed(trace, cursor)
    memo = {} if memo is None else memo
    if "spans" not in memo or memo["spans"][0] is not trace:
        memo["spans"] = (trace, round_spans(trace))  # each round's tokens as HTML, made once per trace
    spans = memo["spans"][1]
    text = committed_parts if lazy else committed_html  # a bundle stores each round's spans once: no joined text
    if options.focus:  # the text's last lines only (it scrolls), so the phase and its chart stay on the first screen
        out.add(HTML, text(trace, spans, done, f'{FOCUS_TEXT_CSS}<div class="focus-text">', "</div>"))
    else:
        out.add(HTML, text(trace, spans, done))
    out.add(HTML, legend_html())
    out.section = PANEL
    out.new_row()
    if options.focus:
        out.add(HTML, phase_strip_html(step.phase, steps.PHASE_TITLES))
        _step(out, trace, cursor, step)
        return StepView(title, step.phase, steps.url_params(trace, cursor), tuple(out.items))
    for shown in steps.steps_shown(trace, cursor):
        _panel(out, trace, cursor, shown)
    out.section = TOTALS
    out.new_row()
    out.add(DIVIDER, "")
    _totals(out, trace, done)
    return StepView(title, step.phase, steps.url_params(trace, cursor), tuple(out.items))


def _panel(out: _Blocks, trace: Trace, cursor: steps.Cursor, shown: steps.Step) -> None:
    """An earlier step's panel, as the full view shows it under the later ones. With a memo (the player bundle) each
    is built once per view and reused by every later step of its round, so a step costs its own panel, not one per
    step before it; a tree round's draft panel draws the tree as the walk stands at the cursor, so it is kept per
    cursor."""
    if out.memo is None:
        _step(out, trace, cursor, shown)
        return
    r = trace.rounds[cursor.round]
    follows = steps.current_step(trace, cursor) if r.is_tree and shown.phase == steps.DRAFT else None
    key = ("panel", id(r), shown, follows, out.options, out.lazy)
    known = out.memo.get(key)
    if known is None or known[0] is not r:
        built = _Blocks(out.options, out.memo, out.lazy)
        built.section = out.section
        _step(built, trace, cursor, shown)
        known = out.memo[key] = (r, tuple(built.items), built.row)
    _, blocks, height = known
    out.items += [Block(b.kind, b.content, b.place, out.row + b.row, b.section) for b in blocks]
    out.row += height


def _step(out: _Blocks, trace: Trace, cursor: steps.Cursor, step: steps.Step) -> None:
    """One phase's panel; the focus view's phase strip already names the phase, so it draws no heading of its own."""
    out.new_row()
    if not out.options.focus and (step.phase != steps.JUDGE or step.position == 0):
        out.add(HEADING, steps.PHASE_TITLES[step.phase])
    PHASES[step.phase](out, trace, cursor, step)
    out.new_row()


def _tree(out: _Blocks, trace: Trace, cursor: steps.Cursor, step: steps.Step, place=MAIN, large=True) -> None:
    """The draft tree as the walk has decided it at this step, with its key (large=False: not made taller in lecture
    mode, so the focus view fits the chart beside it on the first screen)."""
    r = trace.rounds[cursor.round]
    earlier = trace.tokens(cursor.round)
    pending = earlier[-1][1] if earlier else "prompt"
    shape = trace.settings.dynamic or trace.settings.tree  # a dynamic tree's title says scored, expanded, kept
    out.chart(trees.tree_chart, r, step, shape, pending, place=place, large=large)
    out.add(HTML, key_html(trees.tree_key(dynamic=bool(r.scored))), place)


def _beside_tree(out: _Blocks, trace: Trace, cursor: steps.Cursor, step: steps.Step) -> str:
    """The focus view of a tree round's judge or resolve phase: the tree on the left, and the column on the right
    where the phase's own chart goes (both on the first screen); the full view stacks them (MAIN)."""
    if not out.options.focus:
        return MAIN
    _tree(out, trace, cursor, step, TREE, large=False)
    return BESIDE_TREE


# ---- one builder per phase: a tree round draws its tree where a chain round draws its chips ----------------------
def _draft(out: _Blocks, trace: Trace, cursor: steps.Cursor, step: steps.Step) -> None:
    r = trace.rounds[cursor.round]
    out.add(MARKDOWN, draft_sentence(trace, r))
    if r.is_tree:  # in the full view this one tree follows the cursor; the focus view draws it at every phase
        _tree(out, trace, cursor, steps.current_step(trace, cursor))
    elif flow := feature_flow.FLOWS.get(trace.settings.method):  # a head: which feature each draft came from
        out.add(HTML, feature_flow.flow_html(flow, feature_flow.feature_steps(flow, trace, cursor.round)))
    else:
        out.add(HTML, proposals_html(r))
        if r.crossing is not None:  # a draft with its own tokenizer: the translation, what was masked, the realignment
            out.add(HTML, crossing_html(r, trace.meta))
        if r.suffix is not None:  # suffix decoding: which trie, the matched suffix, each draft's path probability
            out.add(HTML, suffix_source_html(r))
            out.chart(charts.suffix_prob_chart, r, trace.settings.suffix.min_token_prob)


def _verify(out: _Blocks, trace: Trace, cursor: steps.Cursor, step: steps.Step) -> None:
    r = trace.rounds[cursor.round]
    committed = committed_length(trace, cursor.round)
    out.add(HTML, verify_html(r, committed, timing_said(trace, cursor.round, out.options.live), verify_reuse(trace)))
    if note := run_notes.verify_time_note(cursor.round, out.options.live):
        out.add(CAPTION, note)
    if r.is_tree:
        out.chart(trees.mask_chart, r, committed)


def timing_said(trace: Trace, round_index: int, live: bool) -> str:
    """Beside a verify pass's time: whose it is (a recorded trace's machine) and what round 1's holds (warm-up)."""
    if not live:
        return f"recorded on {run_notes.machine_name(trace.meta)}, not this machine's"
    return "includes first-call warm-up" if run_notes.verify_time_note(round_index, live) else ""


def _judge(out: _Blocks, trace: Trace, cursor: steps.Cursor, step: steps.Step) -> None:
    r = trace.rounds[cursor.round]
    if r.is_tree:
        _tree_judge(out, trace, cursor, step)
        return
    pos = r.positions[step.position]
    out.new_row()
    out.chart(charts.pq_chart, pos, place=LEFT)
    if trace.settings.verifier == BLOCK:  # the stop test after this draft, not u against min(1, p/q)
        stop = block_stops(r)[step.position]
        out.chart(charts.block_stop_chart, pos, stop, place=RIGHT)
        out.add(MARKDOWN, block_judge_sentence(r, stop), RIGHT)
        return
    out.chart(charts.acceptance_chart, pos, place=RIGHT)
    out.add(MARKDOWN, judge_sentence(pos), RIGHT)


def _tree_judge(out: _Blocks, trace: Trace, cursor: steps.Cursor, step: steps.Step) -> None:
    """One child's test: q and what it is judged against, min(1, p/q) against u, and the residual it leaves."""
    r = trace.rounds[cursor.round]
    node = r.nodes[step.position]
    heading = f"Node {node.id + 1} (depth {node.depth}): q and p of '{visible(node.text)}'"
    out.new_row()
    right = _beside_tree(out, trace, cursor, step)
    focus = right == BESIDE_TREE  # the focus view: the test beside the tree, q and p under both
    if not focus:
        right = RIGHT
        out.chart(charts.pq_chart, node, heading, place=LEFT)
    out.chart(charts.acceptance_chart, node, place=right)
    out.add(MARKDOWN, tree_judge_sentence(r, node), right)
    out.new_row()
    if focus:
        out.chart(charts.pq_chart, node, heading)
    if node.verdict == "rejected":  # the residual it leaves (none when nothing is left to draw)
        out.chart(trees.sibling_residual_chart, r, node)


def _resolve(out: _Blocks, trace: Trace, cursor: steps.Cursor, step: steps.Step) -> None:
    r = trace.rounds[cursor.round]
    out.new_row()
    where = _beside_tree(out, trace, cursor, step) if r.is_tree else MAIN
    block = trace.settings.verifier == BLOCK
    if r.extra.kind == "correction":
        weight = (kept_weight(block_stops(r)),) if block else ()  # a block's residual: max(0, w·p − q)
        out.chart(charts.residual_chart, r, *weight, place=where)
    else:
        out.chart(charts.bonus_chart, r, place=where)
    out.add(MARKDOWN, resolve_sentence(r, block), where)


def _commit(out: _Blocks, trace: Trace, cursor: steps.Cursor, step: steps.Step) -> None:
    r = trace.rounds[cursor.round]
    if r.is_tree and out.options.focus:
        _tree(out, trace, cursor, step)
    prev = trace.rounds[cursor.round - 1] if cursor.round else None
    before = (prev.target_cache[1], prev.draft_cache[1]) if prev else None
    earlier = trace.tokens(cursor.round)
    if r.is_tree:  # the pass first re-reads everything the previous round committed
        pending = tuple(text for _, text, _ in earlier[len(earlier) - len(prev.committed) :]) if prev else ()
    else:
        pending = (earlier[-1][1] if earlier else "prompt",)
    has_draft = methods.get(trace.settings.method).loads_draft
    out.chart(charts.cache_chart, r, has_draft, before, pending)
    out.add(MARKDOWN, commit_sentence(r))


PHASES = {
    steps.DRAFT: _draft,
    steps.VERIFY: _verify,
    steps.JUDGE: _judge,
    steps.RESOLVE: _resolve,
    steps.COMMIT: _commit,
}


def _totals_after(trace: Trace, done: int, memo: dict | None) -> Totals:
    """The totals of the first `done` rounds, once per count with a memo (a player bundle asks at every step of every
    view: summing every round before each one made a long run's bundle quadratic)."""
    if memo is None:
        memo = {}
    if "totals" not in memo or memo["totals"][0] is not trace:
        memo["totals"] = (trace, {})
    known = memo["totals"][1]
    if done not in known:
        rounds = trace.rounds[:done]
        known[done] = Totals.of(rounds, sum(r.draft_ms + r.verify_ms for r in rounds) / 1e3)
    return known[done]


def _totals(out: _Blocks, trace: Trace, done: int) -> None:
    """The rounds committed so far in numbers: α, τ, tokens/s, and their times and accepted lengths."""
    rounds = trace.rounds[:done]
    totals = _totals_after(trace, done, out.memo)
    alpha = "n/a" if totals.alpha is None else f"{totals.alpha:.2f}"
    out.new_row()
    out.add(
        METRICS,
        (
            ("Rounds committed", str(totals.rounds), ""),
            ("α (accepted / judged)", alpha, ALPHA_HELP),
            ("τ (tokens per target pass)", f"{totals.tau:.2f}", ""),
            ("Tokens/s (model time)", f"{totals.tokens_per_s:.0f}", ""),
        ),
    )
    if not rounds:
        return
    out.new_row()
    out.chart(charts.timing_chart, rounds, place=LEFT)
    out.chart(charts.accepted_length_chart, rounds, trace.settings.draft_length, place=RIGHT)
    if out.options.live:
        out.add(CAPTION, run_notes.FIRST_ROUND_NOTE, LEFT)
    else:
        out.add(CAPTION, f"Times recorded on {literal(run_notes.machine_name(trace.meta))}: not this machine's.", LEFT)


@dataclass(frozen=True)
class Column:
    """One column of a row: its place, its relative width, and its blocks in order."""

    place: str
    width: float
    blocks: tuple[Block, ...]


@dataclass(frozen=True)
class Row:
    """Consecutive blocks of one row: one MAIN column, or side by side columns (COLUMNS)."""

    section: str
    columns: tuple[Column, ...]


def rows(blocks: tuple[Block, ...], section: str | None = None) -> tuple[Row, ...]:
    """The blocks (of one section, or all) grouped into rows of columns, as the page and the player lay them out."""
    grouped: list[list[Block]] = []
    for block in blocks:
        if section is not None and block.section != section:
            continue
        if grouped and (grouped[-1][0].row, grouped[-1][0].section) == (block.row, block.section):
            grouped[-1].append(block)
        else:
            grouped.append([block])
    return tuple(_row(group) for group in grouped)


def _row(group: list[Block]) -> Row:
    """One row's columns: a MAIN row is one column; otherwise the COLUMNS layout that holds its places."""
    places = {b.place for b in group}
    if places == {MAIN}:
        return Row(group[0].section, (Column(MAIN, 1.0, tuple(group)),))
    layout = next((cols for key, cols in COLUMNS.items() if places <= key), None)
    if layout is None:
        raise ValueError(f"a row cannot hold the places {sorted(places)}: put {MAIN} blocks on a row of their own")
    return Row(group[0].section, tuple(Column(p, w, tuple(b for b in group if b.place == p)) for p, w in layout))
