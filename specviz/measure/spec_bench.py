"""Spec-Bench (hemingkx/Spec-Bench) as a workload: its rows sampled per category, the measured ranking per category,
and the comparison with its published table that holds across models and machines.

Absolute speedups do not carry from a 7B model on an RTX 3090 to a 135M model on a CPU; two things can: the ranking
of the methods within a category, and a method's category profile (where it does best and worst). The profile is
compared by Spearman's ρ between the measured and the published speedups of one method across the categories both
have. Pure: no printing, no model runs; the rows come from measure/prompts.py, the runs from measure/workload.py.
"""

from __future__ import annotations

import json
import math
import random
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from specviz import methods
from specviz.measure.prompts import MT_BENCH, WORKLOADS_DIR, PromptRow, WorkloadError
from specviz.measure.summary import ALL

CATEGORIES = (MT_BENCH, "translation", "summarization", "qa", "math_reasoning", "rag")  # Spec-Bench's order
PUBLISHED_PATH = WORKLOADS_DIR / "spec-bench-published.json"
DEFAULT_PER_CATEGORY = 5  # rows per category: a CPU-sized sample (docs/spec-bench.md gives the run's time)
MIN_PROFILE_CATEGORIES = 3  # fewer shared categories give no meaningful ρ
# Spec-Bench's method names (its leaderboard's) -> the specviz method that does the same thing, where there is one.
# The lookup first, then the drafters that run a model, in the registry's order (the order the tables list them).
PUBLISHED_TO_OURS = {
    m.spec_bench: name
    for name, m in sorted(methods.REGISTRY.items(), key=lambda item: item[1].draft_cost != methods.HOST_LOOKUP)
    if m.spec_bench
}


def is_spec_bench(rows: Iterable[PromptRow]) -> bool:
    """Whether a workload's rows are Spec-Bench rows (they carry a question_id and turns)."""
    rows = list(rows)
    return bool(rows) and all(row.row_id and row.turns for row in rows)


def select_categories(rows: Sequence[PromptRow], wanted: Sequence[str]) -> list[PromptRow]:
    """The rows of the categories asked for (a Spec-Bench category such as 'qa' or 'mt_bench', or an MT-bench
    subcategory such as 'writing'); a name that matches no row is refused with the categories there are."""
    if not wanted:
        return list(rows)
    present = list(dict.fromkeys(row.tag for row in rows))
    subcategories = list(dict.fromkeys(row.category for row in rows if row.category and row.category != row.tag))
    for name in wanted:
        if not any(name in (row.tag, row.category) for row in rows):
            listed = ", ".join(present) + (f" (MT-bench's: {', '.join(subcategories)})" if subcategories else "")
            raise WorkloadError(f"--category {name!r} matches no row; this workload's categories: {listed}.")
    return [row for row in rows if row.tag in wanted or row.category in wanted]


def sample_per_category(rows: Sequence[PromptRow], per_category: int, seed: int) -> list[PromptRow]:
    """At most per_category rows of each tag, drawn without replacement by `seed` (same seed, same rows), kept in the
    file's order; 0 keeps every row."""
    if per_category < 0:
        raise WorkloadError(f"--per-category must be 0 (every row) or more; got {per_category}.")
    if per_category == 0:
        return list(rows)
    rng = random.Random(seed)
    chosen: set[int] = set()
    for tag in dict.fromkeys(row.tag for row in rows):
        indices = [i for i, row in enumerate(rows) if row.tag == tag]
        chosen.update(rng.sample(indices, min(per_category, len(indices))))
    return [row for i, row in enumerate(rows) if i in chosen]


def second_turn_prompt(first: str, answer: str, second: str) -> str:
    """A two-turn conversation as plain text, for a target with no chat template: the first turn, the target's own
    answer and the second turn, separated by blank lines (an instruct target gets its chat template instead)."""
    return f"{first}\n\n{answer.strip()}\n\n{second}"


def with_second_turn(row: PromptRow, prompt: str) -> PromptRow:
    """The row asking its second turn (prompt: the conversation so far, made by the caller); chat False because the
    caller already wrapped it where the target has a chat template."""
    return replace(row, prompt=prompt, chat=False)


def multi_turn(rows: Sequence[PromptRow]) -> list[PromptRow]:
    """The rows that have a second turn (MT-bench's)."""
    return [row for row in rows if len(row.turns) > 1]


@dataclass(frozen=True)
class Published:
    """One table of Spec-Bench's leaderboard: its context and method -> category -> speedup."""

    title: str
    model: str
    gpu: str
    date: str
    source: str
    speedups: dict  # method -> {category or "overall": speedup}
    tau: dict  # method -> mean accepted tokens (where the table gives it)


def published_tables(path: Path = PUBLISHED_PATH) -> list[Published]:
    """Every table of assets/workloads/spec-bench-published.json, first the one compared by default."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise WorkloadError(f"Cannot read Spec-Bench's published table {str(path)!r}: {exc}.") from exc
    return [
        Published(t["title"], t["model"], t["gpu"], t["date"], t["source"], t["speedups"], t.get("tau", {}))
        for t in doc["tables"]
    ]


def category_rows(ranked: Sequence[dict]) -> list[dict]:
    """The ranking's rows of the categories (not the whole workload's), in Spec-Bench's category order."""
    order = {name: i for i, name in enumerate(CATEGORIES)}
    rows = [row for row in ranked if row["tag"] != ALL]
    return sorted(rows, key=lambda r: (order.get(r["tag"], len(order)), r["tag"], r["rank"]))


def measured_profile(ranked: Sequence[dict]) -> dict[str, dict[str, float]]:
    """method -> category -> measured speedup (the best K of that method in that category)."""
    profile: dict[str, dict[str, float]] = {}
    for row in category_rows(ranked):
        if row["speedup"] is None:
            continue
        best = profile.setdefault(row["method"], {})
        best[row["tag"]] = max(best.get(row["tag"], 0.0), row["speedup"])
    return profile


def spearman(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Spearman's ρ (ties get their mean rank); None for fewer than two pairs or when either side is constant."""
    if len(xs) != len(ys) or len(xs) < 2:
        return None
    rx, ry = _ranks(xs), _ranks(ys)
    mx, my = statistics.fmean(rx), statistics.fmean(ry)
    sxy = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    sxx, syy = sum((a - mx) ** 2 for a in rx), sum((b - my) ** 2 for b in ry)
    return None if sxx == 0 or syy == 0 else sxy / math.sqrt(sxx * syy)


def _ranks(values: Sequence[float]) -> list[float]:
    """1-based ranks, ties sharing the mean of the ranks they span."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def profile_agreement(ranked: Sequence[dict], table: Published) -> list[dict]:
    """For each published method that specviz also measured: ρ between its measured and published speedups across
    the categories both have (None below MIN_PROFILE_CATEGORIES), its best and worst category on each side."""
    measured = measured_profile(ranked)
    out = []
    for theirs, ours in PUBLISHED_TO_OURS.items():
        if theirs not in table.speedups or ours not in measured:
            continue
        shared = [c for c in CATEGORIES if c in measured[ours] and c in table.speedups[theirs]]
        mine, published = [measured[ours][c] for c in shared], [table.speedups[theirs][c] for c in shared]
        rho = spearman(mine, published) if len(shared) >= MIN_PROFILE_CATEGORIES else None
        out.append(
            {
                "published_method": theirs,
                "method": ours,
                "categories": shared,
                "rho": rho,
                "measured_best": _arg(shared, mine, max),
                "published_best": _arg(shared, published, max),
                "measured_worst": _arg(shared, mine, min),
                "published_worst": _arg(shared, published, min),
            }
        )
    return out


def _arg(names: Sequence[str], values: Sequence[float], pick) -> str | None:
    return names[values.index(pick(values))] if values else None


def ranking_agreement(ranked: Sequence[dict], table: Published) -> list[dict]:
    """Per category: ρ between the measured and the published order of the methods both have (None for fewer than
    two such methods), and each side's best of them."""
    measured = measured_profile(ranked)
    shared_methods = [(t, o) for t, o in PUBLISHED_TO_OURS.items() if t in table.speedups and o in measured]
    out = []
    for category in CATEGORIES:
        pairs = [(t, o) for t, o in shared_methods if category in measured[o] and category in table.speedups[t]]
        if not pairs:
            continue
        mine = [measured[o][category] for _, o in pairs]
        published = [table.speedups[t][category] for t, _ in pairs]
        out.append(
            {
                "category": category,
                "methods": [o for _, o in pairs],
                "rho": spearman(mine, published),
                "measured_best": _arg([o for _, o in pairs], mine, max),
                "published_best": _arg([o for _, o in pairs], published, max),
            }
        )
    return out


def prefill_split(results: Sequence) -> list[dict]:
    """Per category and method (plain included): the mean prompt length in characters, the mean seconds before the
    first round (prefill and set-up: wall time minus the rounds' draft and verify time) and the decode-only tokens/s
    (committed tokens over the rounds' time), so a 3,000-character prompt's prefill is not read as slow decoding."""
    groups: dict[tuple[str, str], list] = {}
    for res in results:
        groups.setdefault((res.run.tag, res.run.method), []).append(res.run)
        for plain in res.plains[:1]:
            groups.setdefault((plain.tag, plain.method), [])
            if all(plain is not seen for seen in groups[(plain.tag, plain.method)]):
                groups[(plain.tag, plain.method)].append(plain)
    order = {name: i for i, name in enumerate(CATEGORIES)}
    out = []
    for (tag, method), runs in sorted(groups.items(), key=lambda kv: (order.get(kv[0][0], 99), kv[0])):
        rounds_s = [(r.draft_ms or 0.0) / 1e3 + (r.verify_ms or 0.0) / 1e3 for r in runs]
        out.append(
            {
                "category": tag,
                "method": method,
                "runs": len(runs),
                "prompt_chars": statistics.fmean(len(r.prompt) for r in runs),
                "prefill_s": statistics.fmean(max(0.0, r.wall_s - s) for r, s in zip(runs, rounds_s)),
                "decode_tokens_per_s": statistics.fmean(r.committed / s for r, s in zip(runs, rounds_s) if s > 0)
                if any(s > 0 for s in rounds_s)
                else None,
            }
        )
    return out


def spec_bench_document(ranked: Sequence[dict], results: Sequence, table: Published, sampled: dict) -> dict:
    """The Spec-Bench part of the workload JSON: the sample, the category ranking, the comparison with the published
    table and the prefill apart from decoding."""
    return {
        "sample": sampled,
        "published": {"title": table.title, "model": table.model, "gpu": table.gpu, "date": table.date},
        "category_ranking": category_rows(ranked),
        "profile_agreement": profile_agreement(ranked, table),
        "ranking_agreement": ranking_agreement(ranked, table),
        "prefill": prefill_split(results),
    }
