"""The whole family ranked: every measured setting (method, K, tree or schedule) by its measured speedup, per tag.

One row per (tag, source, method, K) of the summary (measure/summary.py summarize), best first within each tag, "all"
prompts first: the measured speedup over plain and its interval, α, τ (tokens per target pass), c (a draft step
relative to a target step, from the step times measured before the workload: measure/predict.py draft_step_cost; 0
for a lookup on the host, always; where a model drafter's is unknown, c_note says why: dropped when the step costs
cannot be true, as on a busy machine) and the mean drafts per round (K for a fixed chain; less for suffix decoding and
the adaptive schedules, which size each draft themselves), and what casts doubt on its speedup (above τ: doubts). The
command line, the JSON, the CSV and the workload page all read these rows.
"""

from __future__ import annotations

from collections.abc import Sequence

from specviz import methods
from specviz.core import stats
from specviz.core.schedule import CONFIDENCE, CONSTANT, FITTED
from specviz.engine.costs import MeasuredCosts
from specviz.measure.predict import draft_step_cost
from specviz.measure.summary import ALL, groups, summarize
from specviz.measure.verdict_rule import busy_costs_words, has_verdict, speedup_doubt, too_few_words
from specviz.measure.workload import PairedRun

LOOKUP_C = 0.0  # a lookup on the host runs no model: its c is 0 whether or not the costs were timed


def ranking(
    results: Sequence[PairedRun], costs: MeasuredCosts | None = None, seed: int = 0, summary: list[dict] | None = None
) -> list[dict]:
    """Every setting per tag, best measured speedup first ("all" first, then the tags in the summary's order); each
    row has its rank in its tag and whether it is the tag's best. Unmeasured speedups (a server) rank by τ, last."""
    summary = summarize(results, costs, seed) if summary is None else summary
    by_group = groups(results)
    rows = [_row(entry, by_group[_key(entry)], costs) for entry in summary]
    out = []
    for tag in dict.fromkeys(row["tag"] for row in rows):  # ALL first: the summary's order
        ranked = sorted((r for r in rows if r["tag"] == tag), key=_order)
        out += [{**row, "rank": i + 1, "best": i == 0} for i, row in enumerate(ranked)]
    return out


def _key(entry: dict) -> tuple[str, str, str, int]:
    return entry["tag"], entry["source"], entry["method"], entry["k"]


def _order(row: dict) -> tuple:
    """Measured speedup, highest first; then τ; the setting's name breaks ties, so the order is the same every run."""
    speedup = row["speedup"]
    return (speedup is None, -(speedup or 0.0), -(row["tau"] or 0.0), row["setting"])


def _row(entry: dict, group: Sequence[PairedRun], costs: MeasuredCosts | None) -> dict:
    """One summary row with what the ranking adds: the setting in words, c and the drafts per round."""
    runs = [res.run for res in group]
    settings, method = runs[0].settings, methods.get(entry["method"])
    tree, plan = shape_of(entry["method"], settings)
    setting = setting_words(entry["method"], entry["k"], tree, plan)
    c, c_note = cost_of(method, costs, settings.get("exit_layer", 0))
    return {
        "tag": entry["tag"],
        "source": entry["source"],
        "method": entry["method"],
        "k": entry["k"],
        "tree": ",".join(map(str, tree)),
        "schedule": "" if plan == CONSTANT else plan,
        "setting": setting,
        "prompts": entry["prompts"],
        "speedup": entry["speedup"],
        "speedup_ci": tuple(entry["speedup_ci"]),
        "alpha": entry["alpha"],
        "tau": entry["tau"],
        "c": c,
        "c_note": c_note,  # why c is None ("" when it is known): dropped (busy timings), not timed, not measured
        "drafts_per_round": stats.tally(runs).drafts_per_round,
        "doubts": list(speedup_doubt(setting, group).reasons),  # why its speedup cannot be trusted (above τ)
    }


C_DROPPED, C_NOT_TIMED, C_NOT_MEASURED = "dropped", "not timed", "not measured"  # c_note's first word(s)


def cost_of(method: methods.Method, costs: MeasuredCosts | None, exit_layer: int = 0) -> tuple[float | None, str]:
    """(c, why c is None): 0 for a lookup on the host, always; a model drafter's measured c, or None with the reason:
    its timing was dropped because the step costs cannot be true (a busy machine), its step was not timed, or no
    costs were measured (a server)."""
    if method.draft_cost == methods.HOST_LOOKUP:
        return LOOKUP_C, ""
    if costs is None:
        return None, C_NOT_MEASURED if method.speculative else ""
    if busy := busy_costs_words(costs):
        return None, f"{C_DROPPED}: {busy}" if method.speculative else ""
    c = draft_step_cost(method, costs, exit_layer)
    return c, (C_NOT_TIMED if c is None and method.speculative else "")


def c_lines(rows: Sequence[dict]) -> list[str]:
    """Why some settings have no c, one sentence per reason naming the settings ([] when every c is known): a
    measured cost that was dropped says so, never a silent blank."""
    by_note: dict[str, list[str]] = {}
    for row in rows:
        if row.get("c") is None and row.get("c_note"):
            by_note.setdefault(row["c_note"], [])
            if row["setting"] not in by_note[row["c_note"]]:
                by_note[row["c_note"]].append(row["setting"])
    out = []
    for note, settings in by_note.items():
        named = "; ".join(settings)
        if note.startswith(C_DROPPED):
            out.append(f"c is dropped for {named}: {note.removeprefix(C_DROPPED + ': ')}, so no c is built on them.")
        elif note == C_NOT_TIMED:
            out.append(f"c is not known for {named}: its draft step was not timed before the workload.")
        else:
            out.append(f"c is not known for {named}: no step costs were measured (a server's runs).")
    return out


def doubt_lines(rows: Sequence[dict]) -> list[str]:
    """Every ranked speedup that cannot be trusted, with why, one per setting and tag ([] when none)."""
    return [f"{_scope(row['tag'])}: {doubt}" for row in rows for doubt in row.get("doubts") or ()]


def _scope(tag: str) -> str:
    return "all prompts" if tag == ALL else f"prompts tagged {tag!r}"


def shape_of(method: str, settings: dict) -> tuple[tuple[int, ...], str]:
    """(tree shape, K schedule) of a run of `method` from its settings document: () and 'constant' for a fixed chain."""
    entry = methods.get(method)
    tree = tuple(settings.get("tree") or ()) if entry.takes_tree else ()
    return tree, schedule_words(settings) if entry.adaptive and not tree else CONSTANT


def setting_of(method: str, k: int, settings: dict) -> str:
    """A measured setting in the words the ranking, the verdicts and the page use (setting_words)."""
    return setting_words(method, k, *shape_of(method, settings))


def schedule_words(settings: dict) -> str:
    """A run's K schedule from its settings document: 'constant', 'heuristic', 'confidence 0.4', 'confidence fitted'."""
    name = settings.get("k_schedule", CONSTANT)
    if name != CONFIDENCE:
        return name
    threshold = FITTED if settings.get("fit_threshold") else format(settings.get("confidence_threshold", 0.4), "g")
    return f"{CONFIDENCE} {threshold}"


def setting_words(method: str, k: int, tree: tuple[int, ...] = (), plan: str = CONSTANT) -> str:
    """'draft model, K = 4', 'EAGLE-1 head, tree 3,2,1', 'draft model, K = 4, heuristic schedule'."""
    shape = f"tree {','.join(map(str, tree))}" if tree else f"K = {k}"
    return f"{methods.label(method)}, {shape}" + ("" if plan == CONSTANT else f", {plan} schedule")


def best_lines(rows: Sequence[dict]) -> list[str]:
    """One sentence per tag naming its best setting and whether its interval shows it beats plain decoding."""
    return [_best_words(row) for row in rows if row["best"]]


def _best_words(row: dict) -> str:
    """The best setting of a tag in one sentence, by the verdicts' rule (measure/verdict_rule.py): too few prompts
    are not shown to beat plain decoding (the verdict below says "no verdict yet"), nor is a figure whose timing
    cannot be trusted."""
    scope = _scope(row["tag"])
    measured = row["speedup"]
    if measured is None:
        return f"Best for {scope} by τ (speedup not measured: no plain run): {row['setting']}, τ {row['tau']:.2f}."
    low, high = row["speedup_ci"]
    alpha = "no α (nothing was drafted)" if row["alpha"] is None else f"α {row['alpha']:.2f}"
    figure = f"{measured:.2f}x (95% CI {low:.2f}x–{high:.2f}x), {alpha}, τ {row['tau']:.2f}"
    if row.get("doubts"):
        beats = f"but its timing cannot be trusted ({'; '.join(row['doubts'])}): not shown to beat plain decoding"
    elif not has_verdict(row["prompts"]):
        beats = f"{too_few_words(row['prompts'])}: not shown to beat plain decoding"
    elif low > 1.0:
        beats = "it beats plain decoding (the interval's lower end is above 1.00x)"
    elif measured > 1.0:
        beats = "but its interval reaches 1.00x: not shown to beat plain decoding"
    else:
        beats = "no setting is faster than plain decoding here: decode plainly"
    return f"Best for {scope}: {row['setting']} at {figure}; {beats}."


def rank_of(rows: Sequence[dict]) -> dict[tuple[str, str, str, int], int]:
    """(tag, source, method, K) -> its rank in its tag: the CSV's rank columns."""
    return {(r["tag"], r["source"], r["method"], r["k"]): r["rank"] for r in rows}
