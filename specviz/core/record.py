"""The run record: one generation of one prompt by one method, from any source, without needing p and q.

A `Trace` (the in-process engine, with every probability) produces one; a Hugging Face `generate()` lane produces one
from the tokens its streamer saw arrive; a serving engine produces one from its speculative-decoding metrics. The
race, the bench and the workload meter consume records only, and every statistic of them is in `core/stats.py`.
Counts a source cannot report are None, never guessed: a view shows "not reported" for them.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict, dataclass, field

from specviz.core import stats
from specviz.core.trace import ACCEPTED, REJECTED, Trace

ENGINE, HF, VLLM = "specviz", "hf", "vllm"  # the sources of runs
UNTAGGED = "untagged"


# The one schema of a workload result row: a RunRecord's fields and statistics, plus the timings of a result paired
# with its plain runs (measure/workload.py PairedRun: median tokens/s over the repeats, plain tokens/s, speedup). Every
# export and table takes its columns from here, in this order, each view keeping the columns that name it (the CSV
# then adds how each row was produced and its go / no-go: measure/summary.py SETTING_COLUMNS, VERDICT_COLUMNS).
CSV, TABLE, JSON = "csv", "table", "json"  # the CSV download, the page's per-prompt table, the JSON's runs[]
EVERY_VIEW = (CSV, TABLE, JSON)
RESULT_COLUMNS: tuple[tuple[str, tuple[str, ...]], ...] = (  # (name, views)
    ("prompt", EVERY_VIEW),  # the table shows it last (its long text would push the numbers aside)
    ("tag", EVERY_VIEW),
    ("source", EVERY_VIEW),
    ("method", EVERY_VIEW),
    ("k", EVERY_VIEW),
    ("alpha", EVERY_VIEW),
    ("acceptance_rate", EVERY_VIEW),
    ("tau", EVERY_VIEW),
    ("proposed", EVERY_VIEW),
    ("judged", (CSV, JSON)),
    ("accepted", EVERY_VIEW),
    ("rounds", EVERY_VIEW),
    ("committed", (CSV, JSON)),
    ("tokens_per_s", EVERY_VIEW),  # a paired result's: the median over its timing repeats
    ("plain_tokens_per_s", EVERY_VIEW),  # a paired result's (None without a plain baseline)
    ("speedup", EVERY_VIEW),  # a paired result's (None without a plain baseline)
    ("speedup_low", EVERY_VIEW),  # a paired result's lowest and highest speedup over its timing repeats
    ("speedup_high", EVERY_VIEW),
    ("draft_ms", (JSON,)),
    ("verify_ms", (JSON,)),
    ("per_position", (JSON,)),
    ("accepted_lengths", (JSON,)),
    ("by_class", (JSON,)),
    ("tokens", (JSON,)),
    ("text", (JSON,)),
    ("per_round_accepted", (JSON,)),
    ("per_round_drafted", (JSON,)),
)


def result_columns(view: str) -> tuple[str, ...]:
    """The columns of a result row that `view` (CSV, TABLE or JSON) shows, in the schema's order."""
    if view not in EVERY_VIEW:
        raise ValueError(f"unknown view {view!r}; one of {', '.join(EVERY_VIEW)}")
    return tuple(name for name, views in RESULT_COLUMNS if view in views)


@dataclass(frozen=True)
class RunRecord:
    """Per target pass ("round"): tokens drafted, judged, accepted and committed, and when they arrived."""

    source: str  # ENGINE, HF or VLLM
    method: str  # a name from specviz.methods
    k: int  # draft tokens asked for per round (0 for plain decoding)
    prompt: str
    text: str
    output_ids: tuple[int, ...]
    per_round_committed: tuple[int, ...]  # tokens each target pass committed (accepted drafts + 1, fewer at a stop)
    per_round_drafted: tuple[int, ...] | None  # drafts proposed per round (None: the source does not say)
    per_round_accepted: tuple[int, ...] | None
    per_round_judged: tuple[int, ...] | None  # drafts that met the accept test (accepted + the one rejected)
    round_end_s: tuple[float, ...]  # seconds from the start until each round's tokens arrived
    wall_s: float
    draft_ms: float | None = None  # time spent drafting, over the whole run (in-process only)
    verify_ms: float | None = None  # time spent in verify passes and the accept test
    settings: dict = field(default_factory=dict)
    tag: str = UNTAGGED
    # In-process extras (need p and q or the token texts): empty for other sources.
    overlap_by_position: tuple[float | None, ...] = ()  # mean sum_x min(p, q) at each position where judged
    by_class: dict = field(default_factory=dict)  # token class -> [judged, accepted]
    tokens: tuple = ()  # (text, min(1, p/q) or None, origin) per output token, for the heatmap
    meta: dict = field(default_factory=dict)  # where it ran (server URL without credentials, model names, ...)
    # Set only by a source that reports totals but not rounds (a server's counters or per-request summary): then the
    # per_round_* lists are None (per_round_committed empty) and every total below comes from here.
    totals: stats.Tally | None = None

    # The statistics, each computed in core/stats.py.
    @property
    def rounds(self) -> int | None:
        return stats.counts(self).rounds

    @property
    def committed(self) -> int:
        return stats.counts(self).committed

    @property
    def proposed(self) -> int | None:
        return stats.counts(self).proposed

    @property
    def accepted(self) -> int | None:
        return stats.counts(self).accepted

    @property
    def judged(self) -> int | None:
        return stats.counts(self).judged

    @property
    def alpha(self) -> float | None:
        return stats.alpha([self])

    @property
    def acceptance_rate(self) -> float | None:
        return stats.acceptance_rate([self])

    @property
    def tau(self) -> float | None:
        return stats.tau([self])

    @property
    def tokens_per_s(self) -> float:
        return stats.tokens_per_s(self.committed, self.wall_s)

    @property
    def ttft_s(self) -> float:
        return self.round_end_s[0] if self.round_end_s else 0.0

    def arrivals(self) -> tuple[tuple[float, int], ...]:
        """(seconds since start, tokens that arrived then) per round."""
        return tuple(zip(self.round_end_s, self.per_round_committed))

    def to_dict(self) -> dict:
        """The stored fields plus the derived statistics, under the keys the JSON exports use."""
        return {
            **asdict(self),
            "proposed": self.proposed,
            "accepted": self.accepted,
            "judged": self.judged,
            "rounds": self.rounds,
            "committed": self.committed,
            "alpha": self.alpha,
            "acceptance_rate": self.acceptance_rate,
            "tau": self.tau,
            "tokens_per_s": self.tokens_per_s,
            "per_position": stats.per_position([self]),
            "accepted_lengths": stats.accepted_length_histogram([self]),
        }

    @classmethod
    def of_trace(cls, trace: Trace, tag: str = UNTAGGED, round_end_s: tuple[float, ...] | None = None) -> RunRecord:
        """The record of an in-process run; round_end_s defaults to the trace's own draft + verify times."""
        rounds = trace.rounds
        if round_end_s is None:
            elapsed, ends = 0.0, []
            for r in rounds:
                elapsed += (r.draft_ms + r.verify_ms) / 1e3
                ends.append(elapsed)
            round_end_s = tuple(ends)
        settings = trace.settings
        return cls(
            source=ENGINE,
            method=settings.method,
            k=settings.draft_length,
            prompt=trace.prompt,
            text=trace.text,
            output_ids=trace.output_ids,
            per_round_committed=tuple(len(r.committed) for r in rounds),
            per_round_drafted=tuple(r.proposed for r in rounds),
            per_round_accepted=tuple(r.accepted for r in rounds),
            per_round_judged=tuple(r.judged for r in rounds),
            round_end_s=tuple(round_end_s),
            wall_s=trace.totals.wall_s,
            draft_ms=sum(r.draft_ms for r in rounds),
            verify_ms=sum(r.verify_ms for r in rounds),
            settings=settings.to_dict(),
            tag=tag,
            overlap_by_position=_overlap_by_position(trace),
            by_class=_by_class(trace),
            tokens=tuple(_heat_tokens(trace)),
            meta=dict(trace.meta),
        )


def _judged_positions(trace: Trace) -> Iterator[tuple[int, object]]:
    for r in trace.rounds:
        for pos in r.positions:
            if pos.verdict in (ACCEPTED, REJECTED):
                yield r.index, pos


def _overlap_by_position(trace: Trace) -> tuple[float | None, ...]:
    """Mean sum_x min(p_i, q_i) over the rounds where position i was judged: the analytic acceptance there."""
    sums: dict[int, list[float]] = {}
    for _, pos in _judged_positions(trace):
        sums.setdefault(pos.index, []).append(pos.overlap or 0.0)
    width = max(sums, default=-1) + 1
    return tuple(sum(sums[i]) / len(sums[i]) if i in sums else None for i in range(width))


TOKEN_CLASSES = ("whitespace", "punctuation", "number", "keyword", "identifier/word", "copied from prompt")


def token_class(text: str, copied: bool = False) -> str:
    """Coarse class of a token's text, for acceptance by class."""
    import keyword

    word = text.strip()
    if copied:
        return "copied from prompt"
    if not word:
        return "whitespace"
    if word.replace(".", "", 1).replace("_", "").isdigit():
        return "number"
    if keyword.iskeyword(word) or keyword.issoftkeyword(word):
        return "keyword"
    if any(ch.isalnum() for ch in word):
        return "identifier/word"
    return "punctuation"


def _by_class(trace: Trace) -> dict[str, list[int]]:
    """Token class -> [judged, accepted] over the judged drafts."""
    copied = _copied_positions(trace)
    out: dict[str, list[int]] = {}
    for round_index, pos in _judged_positions(trace):
        counts = out.setdefault(token_class(pos.text, (round_index, pos.index) in copied), [0, 0])
        counts[0] += 1
        counts[1] += pos.verdict == ACCEPTED
    return out


def _copied_positions(trace: Trace, n: int = 3) -> set[tuple[int, int]]:
    """(round, position) of drafts that complete an n-gram also found in the prompt: text copied from it."""
    prompt = list(trace.prompt_ids)
    grams = {tuple(prompt[i : i + n]) for i in range(len(prompt) - n + 1)}
    history, copied = list(prompt), set()
    for r in trace.rounds:
        context = list(history)
        for pos in r.positions:
            context.append(pos.token_id)
            if tuple(context[-n:]) in grams:
                copied.add((r.index, pos.index))
        history.extend(r.committed)
    return copied


def _heat_tokens(trace: Trace) -> Iterator[tuple[str, float | None, str]]:
    """Accepted drafts carry the min(1, p/q) they passed with; corrections, bonus and plain tokens were never judged
    by that test (they are drawn from the residual or from p), so they carry None."""
    for r in trace.rounds:
        for pos in r.positions:
            if pos.accepted:
                yield (pos.text, pos.ratio, ACCEPTED)
        if r.extra:
            yield (r.extra.text, None, r.extra.kind)
