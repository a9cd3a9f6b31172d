"""Many prompts -> per-prompt, per-position and per-tag acceptance, with the measured speedup over plain decoding.

Parsing is strict about what it reports and lenient about what it keeps: unreadable rows are listed by line number
and the valid rows still run. Every method is timed against a plain run of the same prompt in the same session.
"""

from __future__ import annotations

import csv
import io
import json
import keyword
import math
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Callable, Iterable, Iterator

import numpy as np

from specviz.core.settings import RunSettings
from specviz.core.trace import ACCEPTED, REJECTED, Trace
from specviz.errors import SpecvizError

MAX_PROMPTS = 500
MAX_FILE_BYTES = 2_000_000
UNTAGGED = "untagged"


class WorkloadError(SpecvizError):
    """A workload that cannot be read at all (binary, too big, no prompt column, no valid rows)."""


@dataclass(frozen=True)
class PromptRow:
    prompt: str
    tag: str = UNTAGGED
    line: int = 0  # where it came from in the input, for messages


@dataclass(frozen=True)
class Workload:
    rows: tuple[PromptRow, ...]
    problems: tuple[str, ...] = ()  # "line 7: ..." for every row that was skipped


def parse_workload(
    data: bytes | str, filename: str = "pasted.txt", max_bytes: int = MAX_FILE_BYTES, max_prompts: int = MAX_PROMPTS
) -> Workload:
    """Prompts from .jsonl ({"prompt", "tag"}), .csv (prompt[, tag] columns) or text (blocks split by --- or blank lines)."""
    text = _as_text(data, filename, max_bytes)
    suffix = Path(filename).suffix.lower()
    parse = {".jsonl": _parse_jsonl, ".json": _parse_jsonl, ".csv": _parse_csv}.get(suffix, _parse_text)
    rows, problems = parse(text)
    if not rows:
        detail = f" ({'; '.join(problems[:3])})" if problems else ""
        raise WorkloadError(f"{filename}: no usable prompts found{detail}.")
    if len(rows) > max_prompts:
        raise WorkloadError(f"{filename}: {len(rows)} prompts; at most {max_prompts} per run. Split the file.")
    return Workload(tuple(rows), tuple(problems))


def _as_text(data: bytes | str, filename: str, max_bytes: int) -> str:
    raw = data.encode("utf-8") if isinstance(data, str) else data
    if len(raw) > max_bytes:
        raise WorkloadError(f"{filename} is {len(raw) / 1e3:,.0f} kB; workloads are limited to {max_bytes / 1e3:,.0f} kB here.")
    if b"\x00" in raw:
        raise WorkloadError(f"{filename} looks binary, not text: give a .txt, .jsonl or .csv file.")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise WorkloadError(f"{filename} is not UTF-8 text (byte {exc.start}): save it as UTF-8.") from exc


def _parse_jsonl(text: str) -> tuple[list[PromptRow], list[str]]:
    rows, problems = [], []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(f"line {number}: not valid JSON ({exc.msg})")
            continue
        row = _row(record, number) if isinstance(record, dict) else "expected an object with a \"prompt\" field"
        (rows.append(row) if isinstance(row, PromptRow) else problems.append(f"line {number}: {row}"))
    return rows, problems


def _parse_csv(text: str) -> tuple[list[PromptRow], list[str]]:
    reader = csv.DictReader(io.StringIO(text))
    columns = [c.strip().lower() for c in reader.fieldnames or []]
    if "prompt" not in columns:
        raise WorkloadError(f"The CSV has no 'prompt' column (its columns: {', '.join(columns) or 'none'}). Add a header row with prompt[,tag].")
    rows, problems = [], []
    for record in reader:
        number = reader.line_num
        clean = {(k or "").strip().lower(): v for k, v in record.items()}
        row = _row(clean, number)
        (rows.append(row) if isinstance(row, PromptRow) else problems.append(f"line {number}: {row}"))
    return rows, problems


def _parse_text(text: str) -> tuple[list[PromptRow], list[str]]:
    """Blocks separated by a line holding only --- or, when there is none, by blank lines."""
    lines = text.splitlines()
    dashed = any(line.strip() == "---" for line in lines)
    rows, block, start = [], [], 1
    for number, line in enumerate([*lines, None], start=1):  # None ends the last block
        if line is None or (line.strip() == "---" if dashed else not line.strip()):
            if "".join(block).strip():
                rows.append(PromptRow("\n".join(block).strip("\n"), UNTAGGED, start))
            block, start = [], number + 1
        else:
            block.append(line)
    return rows, []


def _row(record: dict, number: int) -> PromptRow | str:
    prompt = record.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        return "missing or empty \"prompt\""
    tag = record.get("tag") or UNTAGGED
    return PromptRow(prompt, str(tag).strip() or UNTAGGED, number)


# --------------------------------------------------------------------------------------------------- measuring


@dataclass(frozen=True)
class RunRecord:
    """One prompt x method x K, with the plain baseline of the same prompt."""

    prompt: str
    tag: str
    method: str
    k: int
    alpha: float | None  # accepted / judged: the per-token acceptance probability
    tau: float
    proposed: int
    accepted: int
    judged: int
    acceptance_rate: float | None  # accepted / proposed (vLLM's draft acceptance rate)
    rounds: int
    committed: int
    tokens_per_s: float
    plain_tokens_per_s: float
    speedup: float
    draft_ms: float
    verify_ms: float
    per_position: tuple[dict, ...]  # i -> {"position", "reached", "accepted", "overlap"}: overlap = mean sum min(p, q)
    accepted_lengths: tuple[int, ...]  # rounds that accepted 0, 1, ..., K drafts
    vllm_metrics: dict = field(default_factory=dict)
    by_class: dict = field(default_factory=dict)  # token class -> [judged, accepted] over drafted positions
    tokens: tuple = ()  # output tokens as (text, acceptance probability or None, origin) for the heatmap

    def to_dict(self) -> dict:
        return asdict(self)


def record_of(trace: Trace, plain: Trace, tag: str) -> RunRecord:
    """Aggregate one speculative trace against its plain baseline."""
    k = trace.settings.k
    reached, accepted, overlap = [0] * k, [0] * k, [0.0] * k
    lengths = [0] * (k + 1)
    for r in trace.rounds:
        if r.proposed:
            lengths[min(r.accepted, k)] += 1
        for pos in r.positions:
            if pos.verdict in (ACCEPTED, REJECTED):
                reached[pos.index] += 1
                accepted[pos.index] += pos.verdict == ACCEPTED
                overlap[pos.index] += pos.overlap or 0.0
    by_class: dict[str, list[int]] = {}
    copied = _copied_positions(trace)
    for r in trace.rounds:
        for pos in r.positions:
            if pos.verdict in (ACCEPTED, REJECTED):
                counts = by_class.setdefault(token_class(pos.text, (r.index, pos.index) in copied), [0, 0])
                counts[0] += 1
                counts[1] += pos.verdict == ACCEPTED
    per_position = tuple(
        {"position": i + 1, "reached": reached[i], "accepted": accepted[i],
         "rate": accepted[i] / reached[i] if reached[i] else None, "overlap": overlap[i] / reached[i] if reached[i] else None}
        for i in range(k)
    )  # fmt: skip
    t, base = trace.totals, plain.totals
    drafted_rounds = sum(lengths)
    vllm = {
        "num_drafts": drafted_rounds,
        "num_draft_tokens": t.proposed,
        "num_accepted_tokens": t.accepted,
        "num_accepted_tokens_per_pos": list(accepted),
        "mean_acceptance_length": 1 + t.accepted / drafted_rounds if drafted_rounds else 1.0,
        "draft_acceptance_rate": t.acceptance_rate,
        "acceptance_length_histogram": list(lengths),
    }
    return RunRecord(
        prompt=trace.prompt, tag=tag, method=trace.settings.method, k=k, alpha=t.alpha, tau=t.tau,
        proposed=t.proposed, accepted=t.accepted, judged=t.judged, acceptance_rate=t.acceptance_rate, rounds=t.rounds, committed=t.committed,
        tokens_per_s=t.tokens_per_s, plain_tokens_per_s=base.tokens_per_s,
        speedup=t.tokens_per_s / base.tokens_per_s if base.tokens_per_s else math.nan,
        draft_ms=sum(r.draft_ms for r in trace.rounds), verify_ms=sum(r.verify_ms for r in trace.rounds),
        per_position=per_position, accepted_lengths=tuple(lengths), vllm_metrics=vllm,
        by_class=by_class, tokens=tuple(_heat_tokens(trace)),
    )  # fmt: skip


TOKEN_CLASSES = ("whitespace", "punctuation", "number", "keyword", "identifier/word", "copied from prompt")


def token_class(text: str, copied: bool = False) -> str:
    """Coarse class of a token's text, for acceptance by class."""
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
    """Accepted drafts carry min(1, p/q); a correction carries the rejected draft's; bonus and plain tokens none."""
    for r in trace.rounds:
        for pos in r.positions:
            if pos.accepted:
                yield (pos.text, pos.ratio, ACCEPTED)
        if r.extra:
            rejected = next((p.ratio for p in r.positions if p.verdict == REJECTED), None)
            yield (r.extra.text, rejected, r.extra.kind)


@dataclass(frozen=True)
class Progress:
    done: int
    total: int
    prompt: str
    elapsed_s: float

    @property
    def eta_s(self) -> float:
        return self.elapsed_s / self.done * (self.total - self.done) if self.done else math.nan


def run_workload(
    generate: Callable[[str, RunSettings], Trace],
    rows: Iterable[PromptRow],
    methods: Iterable[str],
    ks: Iterable[int],
    base: RunSettings,
    on_progress: Callable[[Progress], None] | None = None,
) -> Iterator[RunRecord]:
    """For each prompt: one plain run, then every method x K; yields records as they finish (stop by not iterating)."""
    import time

    rows, methods, ks = list(rows), list(methods), list(ks)
    for method in ["plain", *methods]:  # warm-up: first calls pay for allocation and kernel selection
        generate(rows[0].prompt, replace(base, method=method, k=ks[0], max_new_tokens=min(8, base.max_new_tokens)))
    total, done, start = len(rows) * len(methods) * len(ks), 0, time.perf_counter()
    for row in rows:
        plain = generate(row.prompt, replace(base, method="plain"))
        for method in methods:
            for k in ks:
                if on_progress:
                    on_progress(Progress(done, total, row.prompt, time.perf_counter() - start))
                yield record_of(generate(row.prompt, replace(base, method=method, k=k)), plain, row.tag)
                done += 1
    if on_progress:
        on_progress(Progress(done, total, "", time.perf_counter() - start))


# ------------------------------------------------------------------------------------------------- summarising


def bootstrap_ci(
    values: list[float], weights: list[float] | None = None, seed: int = 0, draws: int = 2000, level: float = 0.95
) -> tuple[float, float]:
    """Percentile bootstrap interval over prompts of the (weighted) mean; seeded, so the same records give the same.

    With weights it is the interval of a pooled ratio: sum(value * weight) / sum(weight), e.g. alpha pooled over
    prompts with value = per-prompt alpha and weight = drafts judged.
    """
    pairs = [(v, 1.0 if weights is None else w) for v, w in zip(values, weights or values)]
    pairs = [(v, w) for v, w in pairs if v is not None and not math.isnan(v) and w > 0]
    if not pairs:
        return (math.nan, math.nan)
    data, weight = np.asarray(pairs, dtype=float).T
    picks = np.random.default_rng(seed).integers(0, data.size, size=(draws, data.size))  # (draws, prompts)
    estimates = (data[picks] * weight[picks]).sum(axis=1) / weight[picks].sum(axis=1)
    tail = (1 - level) / 2
    return float(np.quantile(estimates, tail)), float(np.quantile(estimates, 1 - tail))


def pooled_alpha(records: list[RunRecord]) -> float | None:
    """alpha over several runs: all accepted drafts over all judged drafts (None when nothing was judged)."""
    judged = sum(r.judged for r in records)
    return sum(r.accepted for r in records) / judged if judged else None


def summarize(records: list[RunRecord], seed: int = 0) -> list[dict]:
    """Per (tag, method, K) and per (all tags, method, K): pooled alpha and tau, mean speedup, bootstrap CIs."""
    groups: dict[tuple[str, str, int], list[RunRecord]] = {}
    for rec in records:
        groups.setdefault((rec.tag, rec.method, rec.k), []).append(rec)
        groups.setdefault(("all", rec.method, rec.k), []).append(rec)
    out = []
    for (tag, method, k), recs in sorted(groups.items(), key=lambda item: (item[0][0] != "all", item[0])):
        proposed, accepted = sum(r.proposed for r in recs), sum(r.accepted for r in recs)
        out.append({
            "tag": tag, "method": method, "k": k, "prompts": len(recs),
            "alpha": pooled_alpha(recs),
            "alpha_ci": bootstrap_ci([r.alpha for r in recs], [r.judged for r in recs], seed),
            "acceptance_rate": accepted / proposed if proposed else None,
            "tau": sum(r.committed for r in recs) / sum(r.rounds for r in recs),
            "tokens_per_s": float(np.mean([r.tokens_per_s for r in recs])),
            "plain_tokens_per_s": float(np.mean([r.plain_tokens_per_s for r in recs])),
            "speedup": float(np.mean([r.speedup for r in recs])),
            "speedup_ci": bootstrap_ci([r.speedup for r in recs], seed=seed),
        })  # fmt: skip
    return out


def records_csv(records: list[RunRecord]) -> str:
    """One row per prompt x method x K (the scalar fields)."""
    columns = ["prompt", "tag", "method", "k", "alpha", "acceptance_rate", "tau", "proposed", "judged", "accepted",
               "rounds", "committed",
               "tokens_per_s", "plain_tokens_per_s", "speedup"]  # fmt: skip
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for rec in records:
        writer.writerow(rec.to_dict())
    return buffer.getvalue()


def results_json(records: list[RunRecord], settings: RunSettings, meta: dict, seed: int = 0) -> str:
    """Everything: settings, one record per run (with vLLM-shaped metrics), and the summary."""
    doc = {
        "format": "specviz.workload",
        "version": 1,
        "settings": {**settings.to_dict(), **meta},
        "runs": [rec.to_dict() for rec in records],
        "summary": summarize(records, seed),
    }
    return json.dumps(doc, indent=2, ensure_ascii=False)



# --------------------------------------------------------------------------------------------- recommendation


@dataclass(frozen=True)
class Recommendation:
    go: bool
    reason: str
    method: str
    k: int
    measured_speedup: float
    predicted_speedup: float
    vllm_config: dict
    hf_generate: str


def predicted_speedup(records: list[RunRecord]) -> tuple[float, float, float]:
    """(predicted speedup, c, verify cost) from the runs' own measured alpha, draft cost and verify cost."""
    from specviz.core.theory import speedup

    plain_ms = float(np.mean([1e3 / r.plain_tokens_per_s for r in records if r.plain_tokens_per_s]))
    proposed, rounds = sum(r.proposed for r in records), sum(r.rounds for r in records)
    alpha = pooled_alpha(records) or 0.0
    c = sum(r.draft_ms for r in records) / proposed / plain_ms if proposed else 0.0
    v = sum(r.verify_ms for r in records) / rounds / plain_ms
    k = records[0].k
    return speedup(min(alpha, 1.0), k, c, v), c, v


def recommend(records: list[RunRecord], draft_source: str | None, temperature: float) -> Recommendation | None:
    """The method and K with the best measured speedup, whether it pays, and how to deploy it."""
    if not records:
        return None
    groups: dict[tuple[str, int], list[RunRecord]] = {}
    for rec in records:
        groups.setdefault((rec.method, rec.k), []).append(rec)
    (method, k), best = max(groups.items(), key=lambda item: float(np.mean([r.speedup for r in item[1]])))
    measured = float(np.mean([r.speedup for r in best]))
    low, _ = bootstrap_ci([r.speedup for r in best])
    predicted, c, v = predicted_speedup(best)
    alpha = pooled_alpha(best) or 0.0
    go = measured >= 1.1 and low > 1.0
    if go:
        reason = f"{method} with K = {k} measured {measured:.2f}x (95% CI from {low:.2f}x) at alpha {alpha:.2f}."
    else:
        reason = (
            f"The best setting ({method}, K = {k}) measured only {measured:.2f}x: alpha {alpha:.2f} does not pay for a "
            f"draft step costing c = {c:.2f} of a target step and a verify pass costing {v:.2f} steps here "
            f"(theory with these costs: {predicted:.2f}x). Decode plainly, or try a cheaper or better-matched proposer."
        )
    return Recommendation(go, reason, method, k, measured, predicted, vllm_config(method, k, draft_source),
                          hf_generate_call(method, k, temperature))  # fmt: skip


def vllm_config(method: str, k: int, draft_source: str | None) -> dict:
    """The matching vLLM --speculative-config."""
    if method == "ngram":
        return {"method": "ngram", "num_speculative_tokens": k, "prompt_lookup_max": 3, "prompt_lookup_min": 1}
    return {"method": "draft_model", "model": draft_source or "<draft model>", "num_speculative_tokens": k}


def hf_generate_call(method: str, k: int, temperature: float) -> str:
    """The matching Hugging Face generate() arguments."""
    sampling = "do_sample=False" if temperature == 0 else f"do_sample=True, temperature={temperature:g}"
    if method == "ngram":
        return f"model.generate(**inputs, prompt_lookup_num_tokens={k}, max_matching_ngram_size=3, {sampling})"
    return (
        f"model.generate(**inputs, assistant_model=draft_model, num_assistant_tokens={k}, "
        f'num_assistant_tokens_schedule="constant", {sampling})'
    )
