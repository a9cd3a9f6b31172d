"""Does speculation still pay under load? The load sweep's numbers, from streamed requests' timings (pure).

One level is one server at one concurrency N: a closed loop kept N requests in flight over the prompts. From each
request's timing (remote/concurrency.py records it from the stream): time to first token (TTFT), the gap before
every token after the first (ITL: a burst of n tokens in one event is one gap, then n - 1 zeros, core/stats.py), the
mean gap per request (TPOT = (end-to-end - TTFT) / (tokens - 1): the figure a user waiting for a stream feels),
end-to-end time. A level's output tokens/s is all its tokens over its wall time, first request sent to last token
received.

Speedup, for a speculative server against the plain one at the same N over the same prompts:
- latency: plain / speculative median end-to-end time, and the same for the median TPOT (above 1: faster);
- throughput: speculative / plain output tokens/s.
Each has a 95% bootstrap interval over prompts (every draw picks prompts with replacement and takes all of their
requests on both servers; the throughput draw takes the ratio of tokens per request-second, scaled to the measured
ratio). Speculation "stops paying" at the lowest concurrency from which on every level's end-to-end speedup is at
most 1.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

from specviz.core import stats

FORMAT = "specviz.load"
VERSION = 1
PERCENTILES = (("median", 50), ("p90", 90), ("p99", 99))
OVERLOADED, TIMED_OUT, FAILED = "overloaded", "timeout", "failed"  # a failure's kind (its optional "kind" key)


@dataclass(frozen=True)
class RequestTiming:
    """One streamed request, its times in seconds after it was sent."""

    prompt: int  # index into the sweep's prompts
    sent_s: float  # when it was sent, seconds after its level began
    ttft_s: float
    e2e_s: float
    arrivals: tuple[tuple[float, int], ...]  # (seconds after sending, tokens that event carried)
    tokens: int  # the server's count (usage.completion_tokens), else the tokens streamed
    streamed: int  # tokens that arrived in the stream (the check on `tokens`)
    accepted: int | None = None  # the speculative server's per-request metrics, where the stream carried them
    drafted: int | None = None
    per_step_accepted: tuple[int, ...] | None = None

    @property
    def itl_ms(self) -> list[float]:
        return stats.inter_token_latencies_ms(self.arrivals)

    @property
    def tpot_ms(self) -> float | None:
        return (self.e2e_s - self.ttft_s) * 1e3 / (self.tokens - 1) if self.tokens > 1 else None

    def to_dict(self) -> dict:
        """As JSON keeps it: times rounded to 10 µs (far below what a loaded machine's clock tells apart)."""
        doc = asdict(self)
        doc.update({k: round(doc[k], 5) for k in ("sent_s", "ttft_s", "e2e_s")})
        doc["arrivals"] = [[round(t, 5), n] for t, n in self.arrivals]
        doc["per_step_accepted"] = None if self.per_step_accepted is None else list(self.per_step_accepted)
        return doc


@dataclass(frozen=True)
class LevelRun:
    """One server at one concurrency: every counted request (warm-up ones are not) and the level's wall time."""

    server: str
    concurrency: int
    wall_s: float
    requests: tuple[RequestTiming, ...]
    retried: int = 0  # requests refused once (429 / 503 with Retry-After), waited for and then served
    other_traffic: tuple[str, ...] = ()  # signs on the server's counters that other clients used it meanwhile


def percentiles(values: Sequence[float | None]) -> dict:
    """{median, p90, p99} of the known values (None each when there are none)."""
    known = [v for v in values if v is not None and not math.isnan(v)]
    return {name: (float(np.percentile(known, q)) if known else None) for name, q in PERCENTILES}


def level_summary(run: LevelRun) -> dict:
    """A level's figures: requests, tokens (counted and streamed), tokens/s, TTFT, ITL, TPOT and end-to-end
    percentiles in ms, and, from per-request metrics, α pooled over the requests and the accepted-length histogram."""
    requests = run.requests
    tokens = sum(r.tokens for r in requests)
    accepted = [r.accepted for r in requests if r.accepted is not None and r.drafted]
    drafted = [r.drafted for r in requests if r.accepted is not None and r.drafted]
    steps = [a for r in requests for a in (r.per_step_accepted or ())]
    histogram = [steps.count(n) for n in range(max(steps) + 1)] if steps else None
    return {
        "server": run.server,
        "concurrency": run.concurrency,
        "requests": len(requests),
        "output_tokens": tokens,
        "streamed_tokens": sum(r.streamed for r in requests),
        "wall_s": run.wall_s,
        "tokens_per_s": stats.tokens_per_s(tokens, run.wall_s),
        "ttft_ms": percentiles([r.ttft_s * 1e3 for r in requests]),
        "itl_ms": percentiles([gap for r in requests for gap in r.itl_ms]),
        "tpot_ms": percentiles([r.tpot_ms for r in requests]),
        "e2e_ms": percentiles([r.e2e_s * 1e3 for r in requests]),
        "alpha": stats.ratio(sum(accepted), sum(drafted)) if drafted else None,
        "mean_accepted_length": (sum(steps) + len(steps)) / len(steps) if steps else None,
        "accepted_length_histogram": histogram,
        "retried_requests": run.retried,
    }


def _by_prompt(run: LevelRun, prompts: list[int], value) -> list[list[float]]:
    """Per prompt (in `prompts` order), the value of each of its requests that has one."""
    groups = {p: [] for p in prompts}
    for r in run.requests:
        v = value(r)
        if r.prompt in groups and v is not None:
            groups[r.prompt].append(v)
    return [groups[p] for p in prompts]


def _pooled(groups: list[list[float]], pick: np.ndarray) -> list[float]:
    return [v for i in pick for v in groups[i]]


def _median_ratio(num: list[list[float]], den: list[list[float]], seed: int) -> tuple[float | None, list]:
    """median(num) / median(den) over every request, with its bootstrap interval over prompts."""
    every = np.arange(len(num))

    def ratio(pick: np.ndarray) -> float:
        top, bottom = _pooled(num, pick), _pooled(den, pick)
        return float(np.median(top) / np.median(bottom)) if top and bottom and np.median(bottom) > 0 else math.nan

    point = ratio(every)
    if math.isnan(point):
        return None, [None, None]
    return point, list(stats.bootstrap_statistic(len(num), ratio, seed))


def compare(spec: LevelRun, plain: LevelRun, seed: int = 0) -> dict:
    """The speculative server against the plain one at one concurrency: latency and throughput speedups with
    intervals over the prompts both served."""
    prompts = sorted({r.prompt for r in spec.requests} & {r.prompt for r in plain.requests})
    e2e = lambda r: r.e2e_s  # noqa: E731
    tpot = lambda r: r.tpot_ms  # noqa: E731
    latency, latency_ci = _median_ratio(_by_prompt(plain, prompts, e2e), _by_prompt(spec, prompts, e2e), seed)
    tpot_x, tpot_ci = _median_ratio(_by_prompt(plain, prompts, tpot), _by_prompt(spec, prompts, tpot), seed)
    rates = {
        name: (_by_prompt(run, prompts, lambda r: r.tokens), _by_prompt(run, prompts, e2e))
        for name, run in (("spec", spec), ("plain", plain))
    }

    def rate_ratio(pick: np.ndarray) -> float:
        (st, se), (pt, pe) = rates["spec"], rates["plain"]
        spec_rate = sum(_pooled(st, pick)) / max(sum(_pooled(se, pick)), 1e-12)
        plain_rate = sum(_pooled(pt, pick)) / max(sum(_pooled(pe, pick)), 1e-12)
        return spec_rate / plain_rate if plain_rate > 0 else math.nan

    spec_tps = level_summary(spec)["tokens_per_s"]
    plain_tps = level_summary(plain)["tokens_per_s"]
    throughput = spec_tps / plain_tps if plain_tps > 0 else None
    full = rate_ratio(np.arange(len(prompts))) if prompts else math.nan
    if throughput is None or math.isnan(full) or full <= 0:
        throughput_ci = [None, None]
    else:
        low, high = stats.bootstrap_statistic(len(prompts), rate_ratio, seed)
        throughput_ci = [throughput * low / full, throughput * high / full]
    return {
        "server": spec.server,
        "baseline": plain.server,
        "concurrency": spec.concurrency,
        "prompts": len(prompts),
        "latency_speedup": latency,
        "latency_speedup_ci": latency_ci,
        "tpot_speedup": tpot_x,
        "tpot_speedup_ci": tpot_ci,
        "throughput_speedup": throughput,
        "throughput_speedup_ci": throughput_ci,
        "verdict": verdict(latency, latency_ci),
    }


def verdict(speedup: float | None, ci: Sequence[float | None]) -> str:
    """'pays' (the whole interval above 1), 'costs' (below 1), 'unclear' (it holds 1), 'not measured'."""
    if speedup is None or ci[0] is None:
        return "not measured"
    return "pays" if ci[0] > 1 else "costs" if ci[1] < 1 else "unclear"


def stops_paying(comparisons: Sequence[dict]) -> int | None:
    """The lowest concurrency from which on the end-to-end speedup is at most 1 at every measured level (a level that
    dips below 1 and a higher one that pays again is noise or a batch-size effect, not where it stopped paying);
    None when the highest level still paid, or nothing was measured."""
    measured = sorted((c["concurrency"], c["latency_speedup"]) for c in comparisons if c["latency_speedup"] is not None)
    level = None
    for concurrency, speedup in reversed(measured):
        if speedup > 1:
            break
        level = concurrency
    return level


def document(
    levels: Sequence[dict],
    baseline: dict,
    servers: Sequence[dict],
    settings: dict,
    machine: dict,
    prompts: Sequence[dict],
    failure: dict | None = None,
    elapsed_s: float | None = None,
    seed: int = 0,
) -> dict:
    """The sweep as one JSON document (format specviz.load). levels: {concurrency, runs: [LevelRun, baseline
    first]} for every finished level."""
    out_levels, comparisons = [], []
    for level in levels:
        plain, specs = level["runs"][0], level["runs"][1:]
        compared = [compare(spec, plain, seed) for spec in specs]
        comparisons += compared
        out_levels.append(
            {
                "concurrency": level["concurrency"],
                "summaries": [level_summary(run) for run in level["runs"]],
                "speedups": compared,
                "requests": {run.server: [r.to_dict() for r in run.requests] for run in level["runs"]},
            }
        )
        others = {run.server: traffic_words(run.other_traffic) for run in level["runs"] if run.other_traffic}
        if others:
            out_levels[-1]["other_traffic"] = others
    return {
        "format": FORMAT,
        "version": VERSION,
        "baseline": baseline,
        "servers": list(servers),
        "machine": machine,
        "settings": settings,
        "prompts": list(prompts),
        "levels": out_levels,
        "stops_paying": {
            s["server"]: stops_paying([c for c in comparisons if c["server"] == s["server"]]) for s in servers
        },
        "failure": failure,
        "elapsed_s": elapsed_s,
    }


def traffic_words(signs: Sequence[str]) -> str:
    """A level's signs of other clients (remote/vllm.py other_traffic) as the warning the table, CSV and page show."""
    return (
        "other clients used the server during this level (" + "; ".join(signs) + "): its timings are not the "
        "sweep's alone; measure it again when the server is yours alone"
    )


def failure_words(failure: dict) -> str:
    """A document's failure as a sentence: which server failed at which level, and that the levels before are kept
    (an overload's or a timeout's own message names the server and the level already)."""
    if failure.get("server") is None:
        return failure["error"]
    if failure.get("kind") in (OVERLOADED, TIMED_OUT):
        return f"{failure['error']} The levels finished before are kept."
    return (
        f"{failure['server']} failed at concurrency {failure['concurrency']}: {failure['error']} The levels finished "
        "before are kept."
    )


def _num(value, spec: str = ".2f") -> str:
    return "–" if value is None else format(value, spec)


def _interval(ci: Sequence[float | None]) -> str:
    return "–" if ci[0] is None else f"{ci[0]:.2f}-{ci[1]:.2f}"


def table(doc: dict) -> str:
    """One block per concurrency: each server's figures, then each speculative server's speedups."""
    lines = []
    for level in doc["levels"]:
        lines.append(f"concurrency {level['concurrency']}")
        header = (
            f"  {'server':<26} {'reqs':>4} {'tok/s':>7} {'TTFT p50':>8} {'p99':>7} {'TPOT p50':>8} {'p99':>7} "
            f"{'e2e p50':>8} {'p99':>8} {'alpha':>5}"
        )
        lines += [header, "  " + "-" * (len(header) - 2)]
        for s in level["summaries"]:
            lines.append(
                f"  {s['server'][:26]:<26} {s['requests']:>4} {_num(s['tokens_per_s'], '.1f'):>7} "
                f"{_num(s['ttft_ms']['median'], '.0f'):>8} {_num(s['ttft_ms']['p99'], '.0f'):>7} "
                f"{_num(s['tpot_ms']['median'], '.1f'):>8} {_num(s['tpot_ms']['p99'], '.1f'):>7} "
                f"{_num(s['e2e_ms']['median'], '.0f'):>8} {_num(s['e2e_ms']['p99'], '.0f'):>8} {_num(s['alpha']):>5}"
            )
        for c in level["speedups"]:
            lines.append(
                f"  speedup of {c['server']}: latency {_num(c['latency_speedup'])}x "
                f"({_interval(c['latency_speedup_ci'])}), TPOT {_num(c['tpot_speedup'])}x "
                f"({_interval(c['tpot_speedup_ci'])}), throughput {_num(c['throughput_speedup'])}x "
                f"({_interval(c['throughput_speedup_ci'])}): {c['verdict']}"
            )
        for server, words in level.get("other_traffic", {}).items():
            lines.append(f"  warning: {server}: {words}")
        retried = [(s["server"], s.get("retried_requests")) for s in level["summaries"] if s.get("retried_requests")]
        for server, n in retried:
            lines.append(f"  note: {server} refused {n} request(s) once and served them after its Retry-After wait")
        lines.append("")
    for server, level in doc["stops_paying"].items():
        lines.append(
            f"{server}: "
            + (f"speculation stops paying at concurrency {level}" if level else "speculation paid at every level")
        )
    failure = doc["failure"]
    if failure and failure.get("kind") in (OVERLOADED, TIMED_OUT):  # their message names the server and the level
        lines.append(f"stopped: {failure_words(failure)}")
    elif failure:
        lines.append(f"failed at concurrency {failure['concurrency']} on {failure['server']}: {failure['error']}")
    return "\n".join(lines)


CSV_FIELDS = (
    "concurrency",
    "server",
    "role",
    "requests",
    "output_tokens",
    "tokens_per_s",
    "ttft_ms_median",
    "ttft_ms_p90",
    "ttft_ms_p99",
    "itl_ms_median",
    "itl_ms_p90",
    "itl_ms_p99",
    "tpot_ms_median",
    "tpot_ms_p90",
    "tpot_ms_p99",
    "e2e_ms_median",
    "e2e_ms_p90",
    "e2e_ms_p99",
    "alpha",
    "latency_speedup",
    "latency_speedup_low",
    "latency_speedup_high",
    "tpot_speedup",
    "throughput_speedup",
    "throughput_speedup_low",
    "throughput_speedup_high",
    "retried_requests",
    "other_traffic",
)


def to_csv(doc: dict) -> str:
    """One row per concurrency and server; the speculative servers' rows carry their speedups."""
    out = io.StringIO()
    writer = csv.DictWriter(out, CSV_FIELDS, extrasaction="ignore")
    writer.writeheader()
    for level in doc["levels"]:
        speedups = {c["server"]: c for c in level["speedups"]}
        for i, s in enumerate(level["summaries"]):
            row = {k: s.get(k) for k in ("concurrency", "server", "requests", "output_tokens", "tokens_per_s", "alpha")}
            row["role"] = "baseline" if i == 0 else "speculative"
            row["retried_requests"] = s.get("retried_requests", 0)
            row["other_traffic"] = level.get("other_traffic", {}).get(s["server"], "")
            for figure in ("ttft_ms", "itl_ms", "tpot_ms", "e2e_ms"):
                row.update({f"{figure}_{name}": s[figure][name] for name, _ in PERCENTILES})
            c = speedups.get(s["server"]) if i else None
            if c:
                row.update(
                    latency_speedup=c["latency_speedup"],
                    latency_speedup_low=c["latency_speedup_ci"][0],
                    latency_speedup_high=c["latency_speedup_ci"][1],
                    tpot_speedup=c["tpot_speedup"],
                    throughput_speedup=c["throughput_speedup"],
                    throughput_speedup_low=c["throughput_speedup_ci"][0],
                    throughput_speedup_high=c["throughput_speedup_ci"][1],
                )
            writer.writerow(row)
    return out.getvalue()


def to_json(doc: dict) -> str:
    """The document indented, each request on one line (a sweep holds hundreds of them, each with its arrivals)."""
    compact: dict[str, str] = {}

    def mark(request: dict) -> str:
        key = f"@@request-{len(compact)}@@"
        compact[key] = json.dumps(request, separators=(",", ":"))
        return key

    levels = [
        {**level, "requests": {s: [mark(r) for r in rs] for s, rs in level["requests"].items()}}
        for level in doc["levels"]
    ]
    text = json.dumps({**doc, "levels": levels}, indent=2)
    for key, raw in compact.items():
        text = text.replace(f'"{key}"', raw, 1)
    return text


def machine() -> dict:
    """The machine the sweep ran on (the servers' too when they are local, as `serve` starts them): the CPU and the
    torch capability, as the bench records them, and its load when the sweep began."""
    import os

    import torch

    from specviz.measure.bench import cpu_model

    return {
        "cpu": cpu_model(),
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "cores": os.cpu_count(),
        "load_average": round(os.getloadavg()[0], 2),
    }
