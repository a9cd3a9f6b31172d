"""How every table of the app reads: human headers (never snake_case), number formats a person reads at a glance
(two decimals for speedups and α, three significant figures for small numbers), widths and an order that keep the
columns that matter on a 1280 px screen. Pure: column names and values in, plain descriptions out; ui.render turns
them into Streamlit's column_config."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace


@dataclass(frozen=True)
class Column:
    header: str
    format: str | None = None  # printf-style, as Streamlit's NumberColumn takes it; None: chosen from the values
    width: str | int | None = None  # px, or Streamlit's "medium" (200 px) / "large" (400 px); None: the header's
    help: str | None = None


TEXT = "medium"
P_VALUE = "p"  # a column of p-values: written by format_p, as every p-value on a page
COLUMNS: dict[str, Column] = {
    # workload: per prompt and per tag
    "prompt": Column("Prompt", width=320),
    "tag": Column("Tag"),
    "source": Column("Engine", help="which engine measured it: this app's models, or a vLLM server"),
    "method": Column("Method", width=TEXT),
    "k": Column("K", "%d", help="draft tokens per round"),
    "prompts": Column("Prompts", "%d"),
    "alpha": Column("α", "%.2f", help="accepted / judged drafts"),
    "alpha 95% CI": Column("α 95% CI", width=TEXT),
    "acceptance_rate": Column("Accepted / proposed", "%.2f"),
    "tau": Column("τ", "%.2f", help="tokens per target pass"),
    "proposed": Column("Proposed", "%d"),
    "accepted": Column("Accepted", "%d"),
    "rounds": Column("Target passes", "%d"),
    "tokens_per_s": Column("Tokens/s", "%.1f"),
    "plain_tokens_per_s": Column("Plain tokens/s", "%.1f"),
    "speedup": Column("Speedup", "%.2f×", help="over plain decoding, measured"),
    "speedup 95% CI": Column("Speedup 95% CI", width=TEXT),
    "speedup_low": Column("Slowest repeat", "%.2f×", help="the lowest of this prompt's per-repeat speedups"),
    "speedup_high": Column("Fastest repeat", "%.2f×", help="the highest of this prompt's per-repeat speedups"),
    "predicted_speedup": Column("Predicted speedup", "%.2f×", help="τ / (drafts per round · c + v)"),
    # workload: the whole family ranked per tag
    "rank": Column("Rank", width=70, help="by measured speedup within the tag; ★ = the tag's best"),
    "setting": Column("Setting", width=300, help="method and K (or tree shape), with its K schedule if not constant"),
    "drafts per round": Column(
        "Drafts per round",
        "%.2f",
        help="mean drafts per target pass: K for a fixed chain, less for suffix decoding "
        "and the adaptive K schedules, which size each draft themselves",
    ),
    # calculator
    "ops": Column("Operations factor", "%.2f"),
    "c": Column("c", "%.3f", help="draft step / target step"),
    "best_k": Column("Best K", "%d"),
    "expected_tokens": Column("Expected tokens", "%.2f", help="tokens per round (per target pass)"),
    "example": Column("Example", width=TEXT),
    "draft_pct": Column("Draft %", "%.0f%%", help="the K draft steps, in % of one target step"),
    "verify_pct": Column("Verify %", "%.0f%%", help="the verify pass, in % of one target step"),
    "round_pct": Column("Round %", "%.0f%%", help="a whole round, in % of one target step"),
    "shape": Column("Tree shape", width=TEXT),
    "nodes": Column("Nodes", "%d"),
    "depth": Column("Depth", "%d"),
    "verify_cost": Column("Verify cost v", "%.2f", help="in target steps"),
    # exactness lab
    "variant": Column("Sampler", width=TEXT),
    "what": Column("What it does", width="large"),
    "why": Column("Why", width="large"),
    "seen in": Column("Seen in", width=TEXT),
    "tv": Column("TV from p", "%.3g", help="total-variation distance of the exact output from p"),
    "max_abs_diff": Column("max |output − p|", "%.3g"),
    "p_value": Column("χ² p-value", P_VALUE, help="p < 0.001: the samples differ from p"),
    "chi2": Column("χ²", "%.1f"),
    "dof": Column("dof", "%d", help="degrees of freedom"),
    "acceptance": Column("Acceptance", "%.2f", help="accepted / proposed drafts"),
    "verdict": Column("Verdict", width=TEXT),
    "passes_per_token": Column("Target passes per event", "%.2f"),
    "quantity": Column("", width=TEXT),
    # race: the lanes and the recorded benches
    "lane": Column("Lane", width=TEXT),
    "tokens": Column("Tokens", "%d"),
    "time to first token (ms)": Column("First token (ms)", "%.0f"),
    "tokens/s": Column("Tokens/s", "%.1f"),
    "median gap (ms)": Column("Median gap (ms)", "%.1f"),
    "max gap (ms)": Column("Max gap (ms)", "%.1f"),
    "α": Column("α"),
    "τ": Column("τ", "%.2f"),
    "same text as plain": Column("Same text as plain", width=TEXT),
    "speedup vs plain": Column("Speedup vs plain", width=TEXT, help="median of the per-repeat speedups (range)"),
    "repeats": Column("Repeats", "%d", help="timed runs, each paired with plain's run of the same repeat"),
    "file": Column("File", width=350),
    "CPU": Column("CPU", width=TEXT),
    "precision": Column("Precision"),
    "draft vocabulary": Column("Draft vocab", help="the draft proposes from its N most frequent tokens"),
    "plain tokens/s": Column("Plain tokens/s", "%.1f"),
    "best K": Column("Best K", "%d"),
    "v(K)": Column("v(K)", "%.2f", help="the verify pass at the best K, in target steps"),
    "HF assisted at that K": Column("HF speedup", "%.2f×", help="Hugging Face assisted generation at the same K"),
    "= plain": Column("= plain", help="the same text as plain decoding"),
    "prompts × tokens": Column("Prompts × tokens"),
    # workload: the two engines side by side
    "text equal": Column("Same text"),
    "first differing token": Column("First differing token", "%d"),
    "vLLM steps compared": Column("vLLM steps", "%d"),
    "same steps": Column("Same steps", "%d"),
    "first same step": Column("First same step", "%d"),
    "agree from there": Column("Agree from there"),
    "specviz tokens/s": Column("specviz tokens/s", "%.1f"),
    "vLLM tokens/s": Column("vLLM tokens/s", "%.1f"),
    # workload: the load sweep
    "server": Column("Server", width=TEXT, help="plain: the baseline; otherwise the speculative method and its K"),
    "concurrency": Column("Concurrency", "%d", help="requests kept in flight"),
    "TTFT median (ms)": Column("TTFT median (ms)", "%.0f", help="time to first token"),
    "TPOT median (ms)": Column("TPOT median (ms)", "%.1f", help="time per output token after the first"),
    "end-to-end median (ms)": Column("End-to-end median (ms)", "%.0f"),
    "end-to-end p99 (ms)": Column("End-to-end p99 (ms)", "%.0f"),
}
# Shown first, in this order, when a table has them: what a row is, then the figures a reader came for.
KEY_FIRST = (
    "file",
    "prompt",
    "example",
    "lane",
    "shape",
    "category",
    "rank",
    "tag",
    "method",
    "setting",
    "speedup",
    "expected_tokens",
)


def header(name: str) -> str:
    """A column's header: its entry in COLUMNS, else the name in words (snake_case never reaches a reader)."""
    if name in COLUMNS:
        return COLUMNS[name].header
    words = str(name).replace("_", " ").strip()
    return words[:1].upper() + words[1:]


def number_format(values: Iterable) -> str:
    """A printf format for a column of numbers with no entry in COLUMNS: integers as such, two decimals from 0.1 up,
    three significant figures below (0.0123 keeps its digits), scientific below 0.001."""
    numbers = [float(v) for v in values if isinstance(v, int | float) and math.isfinite(float(v))]
    if numbers and all(n == int(n) for n in numbers):
        return "%d"
    small = min((abs(n) for n in numbers if n), default=1.0)
    if small >= 0.1:
        return "%.2f"
    if small < 1e-3:
        return "%.2e"
    return f"%.{2 - math.floor(math.log10(small))}f"  # three significant figures of the smallest


CHAR_PX, HEADER_PAD_PX = 7.5, 34  # a header character in the table's 14 px font; its sort arrow and padding


def header_width(text: str) -> int:
    """Pixels a column needs to show its whole header (the table cuts a header that does not fit with "…")."""
    return max(60, round(len(text) * CHAR_PX + HEADER_PAD_PX))


def column_specs(columns: Sequence[str], values: dict[str, Sequence] | None = None) -> dict[str, Column]:
    """Each column's header, format, width and help; a column with no entry gets its header from its name and, for
    numbers, a format from its values; a column with no width set gets its header's."""
    values = values or {}
    specs = {}
    for name in columns:
        spec = COLUMNS.get(name) or Column(header(name), number_format(values[name]) if name in values else None)
        specs[name] = spec if spec.width else replace(spec, width=header_width(spec.header))
    return specs


WIDE = 6  # a table with more columns than this may scroll sideways at 1280 px: its key columns go first


def column_order(columns: Sequence[str]) -> list[str]:
    """A wide table's columns with KEY_FIRST's in front, so what matters shows before it scrolls sideways; a narrow
    table keeps its own order (inputs, then results)."""
    if len(columns) <= WIDE:
        return list(columns)
    first = [name for name in KEY_FIRST if name in columns]
    return first + [name for name in columns if name not in first]


def format_p(p: float) -> str:
    """A p-value as every page prints it: "p = 0.43", "p = 0.012", "p < 0.001"."""
    if not math.isfinite(p) or p < 0:
        return "p = n/a"
    if p < 1e-3:
        return "p < 0.001"
    return f"p = {p:.2f}" if p >= 0.1 else f"p = {p:.2g}"


def cell_text(value: object, spec: Column, numeric: bool) -> str:
    """A cell as a static table prints it (its cells wrap, where the grid cuts them): a p-value by format_p, a number
    in its column's printf format, anything else as its text; "" for a missing value."""
    if value is None or (isinstance(value, float) and math.isnan(value) and spec.format != P_VALUE):
        return ""
    if spec.format == P_VALUE:
        return format_p(float(value))
    if numeric and spec.format and not isinstance(value, bool):
        return spec.format % value
    return str(value)
