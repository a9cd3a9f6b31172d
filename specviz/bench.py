"""The benchmark: every lane on every prompt, with warm-up, against plain decoding measured in the same run.

Reports per method and K the median tokens/s, the median speedup over plain on the same prompt and repeat, alpha,
tau, the measured draft cost c and verify cost v(K) (in target steps), the speedup predicted from them,
tau / (drafts per round * c + v), and efficiency = measured / predicted: what the loop loses beyond the model passes.
"""

from __future__ import annotations

import os
import platform
import statistics
import sys
from dataclasses import replace
from typing import Callable

import torch
import transformers

from specviz import __version__
from specviz.core.settings import RunSettings
from specviz.engine.compare import hf_generate
from specviz.engine.costs import measure_costs
from specviz.engine.decode import encode_prompt, generate
from specviz.engine.models import ModelPair

OUR_LANES = ("draft", "ngram")
HF_SPEC_LANES = ("hf_assisted", "hf_prompt_lookup")
LANES = ("plain", *OUR_LANES, *HF_SPEC_LANES)
ALPHA_SOURCE = {"hf_assisted": "draft", "hf_prompt_lookup": "ngram"}  # same models and rule: same acceptances


def environment(pair: ModelPair) -> dict:
    """Where the numbers were measured."""
    env = {
        "device": str(pair.device),
        "dtype": str(pair.dtype).removeprefix("torch."),
        "cores": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "cpu": platform.processor() or platform.machine(),
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "specviz": __version__,
        "target": pair.target_name,
        "draft": pair.draft_name,
    }
    if pair.device.type == "cuda":
        env["gpu"] = torch.cuda.get_device_name(pair.device)
    return env


def run_lane(pair: ModelPair, prompt: str, settings: RunSettings, lane: str) -> dict:
    """One timed generation: tokens/s, output ids, and alpha / tau for specviz lanes."""
    if lane in HF_SPEC_LANES:
        run = hf_generate(pair, encode_prompt(pair, prompt), settings, lane)
        return {"tokens_per_s": run.tokens_per_s, "ids": run.output_ids}
    trace = generate(pair, prompt, replace(settings, method=lane))
    t = trace.totals
    return {"tokens_per_s": t.tokens_per_s, "ids": trace.output_ids, "proposed": t.proposed, "accepted": t.accepted,
            "judged": t.judged, "committed": t.committed, "rounds": t.rounds}  # fmt: skip


def run_bench(
    pair: ModelPair,
    prompts: list[str],
    ks: list[int],
    base: RunSettings,
    repeats: int = 1,
    lanes: tuple[str, ...] = LANES,
    on_progress: Callable[[str], None] | None = None,
) -> dict:
    """Measure every lane x K on every prompt `repeats` times; plain runs once per prompt and repeat."""
    say = on_progress or (lambda _: None)
    spec_lanes = [lane for lane in lanes if lane != "plain"]
    say("measuring step costs")
    costs = measure_costs(pair, k_max=max(ks), repeats=15)  # v(K) is noisy at 5 on a busy CPU
    say("warming up")
    for lane in lanes:
        run_lane(pair, prompts[0], replace(base, k=ks[0], max_new_tokens=min(16, base.max_new_tokens)), lane)
    runs: dict[tuple[str, int], list[dict]] = {}
    for rep in range(repeats):
        for i, prompt in enumerate(prompts):
            say(f"repeat {rep + 1}/{repeats}, prompt {i + 1}/{len(prompts)}")
            plain = run_lane(pair, prompt, base, "plain")
            runs.setdefault(("plain", 0), []).append({**plain, "speedup": 1.0, "identical": True})
            for k in ks:
                for lane in spec_lanes:
                    result = run_lane(pair, prompt, replace(base, k=k), lane)
                    result["speedup"] = result["tokens_per_s"] / plain["tokens_per_s"]
                    result["identical"] = result["ids"] == plain["ids"]
                    runs.setdefault((lane, k), []).append(result)
    results = [_summarise(lane, k, rs, runs, costs) for (lane, k), rs in runs.items()]
    return {
        "environment": environment(pair),
        "settings": {**base.to_dict(), "ks": ks, "repeats": repeats, "prompts": len(prompts), "lanes": list(lanes)},
        "costs": costs.to_dict() if costs else None,
        "results": results,
    }


def _summarise(lane: str, k: int, rs: list[dict], runs: dict, costs) -> dict:
    """Medians over runs; the prediction uses the measured tau and costs, so efficiency isolates the loop's overhead."""
    source = runs.get((ALPHA_SOURCE.get(lane, lane), k), rs)
    proposed, judged = sum(r.get("proposed", 0) for r in source), sum(r.get("judged", 0) for r in source)
    rounds, accepted = sum(r.get("rounds", 0) for r in source), sum(r.get("accepted", 0) for r in source)
    tau = sum(r.get("committed", 0) for r in source) / rounds if rounds else None
    measured = statistics.median(r["speedup"] for r in rs)
    c = verify = predicted = None
    if lane != "plain" and costs and tau:
        c = costs.c if lane in ("draft", "hf_assisted") else 0.0  # a lookup costs next to nothing
        drafts_per_round = proposed / rounds  # K for a draft model; fewer for a lookup that finds no match
        verify = (1.0, *costs.verify_relative)[min(round(drafts_per_round), costs.k_max)]
        predicted = tau / (drafts_per_round * c + verify)
    return {
        "method": lane,
        "k": k,
        "tokens_per_s": statistics.median(r["tokens_per_s"] for r in rs),
        "speedup_vs_plain": measured,
        "alpha": accepted / judged if judged else None,  # per-token acceptance probability
        "acceptance_rate": accepted / proposed if proposed else None,  # vLLM's: accepted / proposed
        "tau": tau,
        "c": c,
        "verify_cost": verify,
        "predicted_speedup": predicted,
        "efficiency": measured / predicted if predicted else None,
        "identical_to_plain": all(r["identical"] for r in rs),
        "runs": len(rs),
    }


def results_table(doc: dict) -> str:
    """The results as a Markdown table (what the README quotes)."""
    head = "| method | K | tokens/s | speedup vs plain | α | τ | c | v(K) | predicted | efficiency | = plain |\n"
    head += "|---|---|---|---|---|---|---|---|---|---|---|\n"
    fmt = lambda v, f: "–" if v is None else format(v, f)  # noqa: E731
    rows = sorted(doc["results"], key=lambda r: (LANES.index(r["method"]), r["k"]))
    return head + "\n".join(
        f"| {r['method']} | {r['k'] or '–'} | {r['tokens_per_s']:.1f} | {r['speedup_vs_plain']:.2f}x | {fmt(r['alpha'], '.2f')} | "
        f"{fmt(r['tau'], '.2f')} | {fmt(r['c'], '.3f')} | {fmt(r['verify_cost'], '.2f')} | {fmt(r['predicted_speedup'], '.2f')} | "
        f"{fmt(r['efficiency'], '.2f')} | {'yes' if r['identical_to_plain'] else 'NO'} |"
        for r in rows
    )
