"""The benchmark: every lane on every prompt, with warm-up, against plain decoding measured in the same run.

Reports per method and K the median tokens/s, the median speedup over plain on the same prompt and repeat, alpha,
tau, the measured draft cost c and verify cost v(K) (in target steps), the speedup predicted from them,
tau / (drafts per round * c + v), and efficiency = measured / predicted: what the loop loses beyond the model passes.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import sys
from collections.abc import Callable
from dataclasses import asdict, replace
from pathlib import Path

import torch
import transformers

from specviz import __version__, methods
from specviz.core import schedule, stats
from specviz.core.dyntree import DynamicTree
from specviz.core.record import RunRecord
from specviz.core.settings import MAX_K, RunSettings, TreeSpec, spec_label, tree_fields
from specviz.core.suffix_tree import SuffixMemory
from specviz.engine.costs import measure_costs
from specviz.engine.decode import forwards_run
from specviz.engine.forward.lean import prepare_forwards
from specviz.engine.loading.models import ModelPair, recorded_name
from specviz.measure.lanes import refusal, run_method, tree_settings
from specviz.measure.predict import predict


def environment(pair: ModelPair, lanes: tuple[str, ...] = ()) -> dict:
    """Where the numbers were measured (and with which feature head, when a lane drafts with one)."""
    env: dict[str, object] = {
        "device": str(pair.device),
        "dtype": str(pair.dtype).removeprefix("torch."),
        "cores": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "cpu": cpu_model(),
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "load_average": round(os.getloadavg()[0], 2),  # 1-minute load now: above the core count, timings suffer
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "specviz": __version__,
        "target": recorded_name(pair.target_name),
        "draft": recorded_name(pair.draft_name),
    }
    heads = {name: recorded_name(pair.head(name)) for name in lanes if methods.get(name).loads_head}
    if heads:
        env["heads"] = heads  # method -> the head its lane drafted with
    if pair.device.type == "cuda":
        env["gpu"] = torch.cuda.get_device_name(pair.device)
    return env


def cpu_model() -> str:
    """The CPU's model name (a speed figure means nothing without it)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def run_bench(
    pair: ModelPair,
    prompts: list[str],
    ks: list[int],
    base: RunSettings,
    repeats: int = 1,
    lanes: tuple[str, ...] = methods.LANES,
    on_progress: Callable[[str], None] | None = None,
    trees: list[TreeSpec] | None = None,
    schedules: list[dict] | None = None,
    tree_methods: tuple[str, ...] = (methods.TREE,),
) -> dict:
    """Measure every lane x K, and every tree shape, on every prompt `repeats` times; plain runs once per prompt and
    repeat. A tree lane's K is its depth; its result row names the shape. tree_methods: who drafts each shape (the
    draft model's tree, and/or feature heads that draft trees: methods.BRANCHING). schedules: the K schedules to compare
    (RunSettings fields, core/schedule.py; default the constant one), each run by every lane it applies to."""
    say = on_progress or (lambda _: None)
    env = environment(pair, lanes)  # taken before the runs: the load average then is the one they met
    base = replace(base, stop_at_eos=False)  # every run makes max_new_tokens: speeds timed over the same length
    spec_lanes = [lane for lane in lanes if lane != methods.PLAIN]
    say("building the lean weights")
    prepare_forwards((pair.target, pair.draft), base.forward)  # their copies and packing: before any clock starts
    say("measuring step costs")
    costs = measure_costs(  # v(K) is noisy at 5 repeats on a busy CPU
        pair,
        k_max=_k_max(ks, schedules),
        repeats=15,
        draft_vocab=base.draft_vocab,
        methods=lanes,
        exit_layer=base.exit_layer,
        forward=base.forward,
    )
    say("warming up")
    trees = list(trees or [])
    shaped = {(name, shape): tree_settings(base, shape, name) for shape in trees for name in tree_methods}
    variants = [
        (lane, plan)
        for plan in (schedules or [CONSTANT_PLAN])
        for lane in spec_lanes
        if takes(lane, replace(base, **plan))
    ]
    for lane in lanes:
        run_method(pair, prompts[0], replace(base, k=ks[0], max_new_tokens=min(16, base.max_new_tokens)), lane)
    for settings in shaped.values():
        run_method(pair, prompts[0], replace(settings, max_new_tokens=min(16, base.max_new_tokens)), settings.method)
    runs: dict[tuple, list[tuple[RunRecord, RunRecord]]] = {}  # (method, K) or (tree, shape) -> (run, plain run)
    for rep in range(repeats):
        # suffix decoding's earlier outputs: this pass's earlier prompts, per lane x K x schedule (a repeat starts
        # afresh, not reading its own output)
        memories = {(lane, k, _plan_key(plan)): SuffixMemory() for lane, plan in variants for k in ks}
        for i, prompt in enumerate(prompts):
            say(f"repeat {rep + 1}/{repeats}, prompt {i + 1}/{len(prompts)}")
            plain = run_method(pair, prompt, base, methods.PLAIN)
            runs.setdefault((methods.PLAIN, 0, ()), []).append((plain, plain))
            for k in ks:
                for lane, plan in variants:
                    run = run_method(
                        pair, prompt, replace(base, k=k, **plan), lane, memory=memories[lane, k, _plan_key(plan)]
                    )
                    runs.setdefault((lane, k, _plan_key(plan)), []).append((run, plain))
            for (name, shape), settings in shaped.items():
                runs.setdefault((name, shape, TREE_LANE), []).append((run_method(pair, prompt, settings, name), plain))
    results = [
        _summarise_tree(lane, k, pairs) if key == TREE_LANE else _summarise(lane, k, pairs, costs)
        for (lane, k, key), pairs in runs.items()
    ]
    return {
        "environment": env,
        "settings": {
            **base.to_dict(),
            **({"quant": asdict(base.quant)} if any(methods.get(lane).quantizes for lane in lanes) else {}),
            "ks": ks,
            "repeats": repeats,
            "prompts": len(prompts),
            "lanes": list(lanes),
            "trees": [spec_label(shape) if isinstance(shape, DynamicTree) else list(shape) for shape in trees],
            **({"tree_methods": list(tree_methods)} if trees and tuple(tree_methods) != (methods.TREE,) else {}),
            **({"k_schedules": list(schedules)} if schedules and schedules != [CONSTANT_PLAN] else {}),
        },
        "forward": forwards_run(pair, replace(base, method=methods.DRAFT)),  # the specviz lanes' (plain's too);
        #                                                                    Hugging Face's lanes run its generate()
        "costs": costs.to_dict() if costs else None,
        "results": results,
    }


def _summarise(lane: str, k: int, pairs: list[tuple[RunRecord, RunRecord]], costs) -> dict:
    """Medians over runs; the prediction uses the measured tau and costs, so efficiency isolates the loop's overhead.
    Figures a lane does not report (Hugging Face's alpha) are None."""
    records = [run for run, _ in pairs]
    counts = stats.tally(records)
    ratios = [run.tokens_per_s / plain.tokens_per_s for run, plain in pairs]
    measured = statistics.median(ratios)
    prediction = predict(records, costs)
    plan = RunSettings.from_dict(records[0].settings)
    return {
        "method": lane,
        "k": k,
        **({"k_schedule": schedule.label(plan)} if plan.adaptive != schedule.CONSTANT else {}),
        "drafts_per_round": counts.drafts_per_round,
        "tokens_per_s": statistics.median(r.tokens_per_s for r in records),
        "speedup_vs_plain": measured,
        "speedup_range": list(stats.spread(ratios)),  # over prompts and repeats: where one prompt's figure may fall
        "alpha": counts.alpha,
        "acceptance_rate": counts.acceptance_rate,
        "tau": counts.tau,
        "c": prediction.c if prediction else None,
        "verify_cost": prediction.verify_cost if prediction else None,
        "predicted_speedup": prediction.speedup if prediction else None,
        "efficiency": measured / prediction.speedup if prediction else None,
        "identical_to_plain": all(run.output_ids == plain.output_ids for run, plain in pairs),
        "runs": len(records),
        **in_run_costs(pairs),
    }


def in_run_costs(pairs: list[tuple[RunRecord, RunRecord]]) -> dict:
    """c and the verify pass as the lane's own rounds paid them, relative to its paired plain run's time per token:
    c_in_run = drafting time per drafted token, verify_in_run = verify time (pass and accept test) per round.
    The costs' c times one draft step alone, after a target pass has pushed the draft's weights out of the CPU's
    caches; a round's K draft steps run back to back, so the chain's c is what the speedup formula's K·c pays.
    Medians over the runs; {} for a lane that does not time its phases (Hugging Face's)."""
    c, verify = [], []
    for run, plain in pairs:
        tally, plain_step_ms = stats.tally([run]), plain_step_s(plain) * 1000
        if run.draft_ms is None or run.verify_ms is None or not tally.rounds or not plain_step_ms:
            return {}
        if tally.proposed:
            c.append(run.draft_ms / tally.proposed / plain_step_ms)
        verify.append(run.verify_ms / tally.rounds / plain_step_ms)
    return {
        **({"c_in_run": statistics.median(c)} if c else {}),
        "verify_in_run": statistics.median(verify),
    }


def plain_step_s(plain: RunRecord) -> float:
    """Plain decoding's seconds per token after its first (which holds the prefill); 0 for a run of one round."""
    ends = plain.round_end_s
    return (ends[-1] - ends[0]) / (len(ends) - 1) if len(ends) > 1 else 0.0


CONSTANT_PLAN = {"k_schedule": schedule.CONSTANT}
TREE_LANE = (methods.TREE,)  # the third part of a tree lane's key in run_bench (a chain lane's is its K schedule's)


def _k_max(ks: list[int], schedules: list[dict] | None) -> int:
    """The largest K whose verify pass is timed: the heuristic may draft up to MAX_K in a round."""
    return MAX_K if any(p.get("k_schedule") == schedule.HEURISTIC for p in schedules or []) else max(ks)


def takes(lane: str, settings: RunSettings) -> bool:
    """Whether a bench lane runs under these settings' K schedule: every lane under the constant one; the adaptive
    ones (and Hugging Face's assisted lane, whose generate() has the same schedules) under the others, unless the lane
    refuses them here (lanes.refusal)."""
    if settings.k_schedule == schedule.CONSTANT:
        return True
    method = methods.get(lane)
    if method.engine == methods.HF:
        mirrored = methods.get(method.mirrors) if method.mirrors else None
        adaptive = bool(mirrored and mirrored.adaptive and method.hf_option == methods.HF_ASSISTANT_MODEL)
        return adaptive and not refusal(lane, settings)
    return method.adaptive


def _plan_key(plan: dict) -> tuple:
    return tuple(sorted(plan.items())) if plan.get("k_schedule", schedule.CONSTANT) != schedule.CONSTANT else ()


def _summarise_tree(method: str, shape: TreeSpec, pairs: list[tuple[RunRecord, RunRecord]]) -> dict:
    """A tree lane's row: measured figures only. The cost model (drafts per round x c + v(K)) describes a chain; a
    tree drafts one pass per depth but verifies every node, so no prediction is made for it. A dynamic tree's nodes
    are its budget (the most it keeps; a round near the end of a run keeps fewer)."""
    settings = RunSettings(method=method, **tree_fields(shape))
    row = _summarise(method, settings.draft_length, pairs, None)
    return {**row, "tree": spec_label(shape), "nodes": settings.draft_slots}


def timing_note(doc: dict) -> str:
    """How the bench timed its speedups, in words (printed under its table)."""
    settings = doc["settings"]
    sampling = settings.get("sampling", {}).get("temperature", 0.0)
    how = "greedy" if not sampling else f"sampled at temperature {sampling:g}"
    return (
        f"Timed on {settings['prompts']} prompts, {settings['max_new_tokens']} new tokens per run, {how}: after a "
        f"warm-up of every lane, {settings['repeats']} repeat(s) of each prompt's plain run then every lane; speedup "
        "vs plain is the median over prompts and repeats of each run's speed over the plain run of its prompt and "
        "repeat (the JSON's speedup_range holds their lowest and highest)."
    )


def results_table(doc: dict) -> str:
    """The results as a Markdown table (what docs/speed.md quotes); a bench that compared K schedules adds the
    drafts per round each lane made (its mean K)."""
    adaptive = "k_schedules" in doc["settings"]
    extra = " drafts/round |" if adaptive else ""
    head = (
        f"| method | K | tokens/s | speedup vs plain | α | τ |{extra} c | v(K) | predicted | efficiency | = plain |\n"
    )
    head += "|---|---|---|---|---|---|" + ("---|" if adaptive else "") + "---|---|---|---|---|\n"
    fmt = lambda v, f: "–" if v is None else format(v, f)  # noqa: E731
    order = methods.LANES + methods.SHAPED + methods.CROSSING_LANES[1:]
    rows = sorted(
        doc["results"], key=lambda r: (order.index(r["method"]), r["k"], r.get("tree", ""), r.get("k_schedule", ""))
    )
    cells = lambda r: [  # noqa: E731
        _lane_name(r), r["k"] or "–", f"{r['tokens_per_s']:.1f}", f"{r['speedup_vs_plain']:.2f}x",
        fmt(r["alpha"], ".2f"), fmt(r["tau"], ".2f"),
        *([fmt(r.get("drafts_per_round"), ".2f")] if adaptive else []),
        fmt(r["c"], ".3f"), fmt(r["verify_cost"], ".2f"),
        fmt(r["predicted_speedup"], ".2f"), fmt(r["efficiency"], ".2f"), "yes" if r["identical_to_plain"] else "NO",
    ]  # fmt: skip
    return head + "\n".join("| " + " | ".join(map(str, cells(r))) + " |" for r in rows)


def recorded_benches(folder: Path) -> list[dict]:
    """The greedy bench JSON files committed in `folder` (assets/bench) that race the draft model, by name."""
    docs = [json.loads(path.read_text()) | {"file": path.name} for path in sorted(folder.glob("*.json"))]
    return [
        doc
        for doc in docs
        if any(r["method"] == methods.DRAFT for r in doc.get("results", []))
        and not doc.get("settings", {}).get("sampling", {}).get("temperature")
    ]


NO_HF_LANE = "no HF lane"  # a bench that raced no Hugging Face assisted lane at the best K (not a missing number)
NONE_SHOWN = "—"  # a figure the bench did not measure, as the table shows it (never Python's "None")


def headline(doc: dict) -> dict:
    """One row per bench file for a table across CPU kinds: where, in what precision, plain tokens/s, the best K of
    the specviz draft lane with its speedup, c and v(K), and Hugging Face's assisted generation at that K (as text:
    "1.28×", or NO_HF_LANE). A figure the bench lacks reads NONE_SHOWN."""
    env, results = doc["environment"], doc["results"]
    plain = next(r for r in results if r["method"] == methods.PLAIN)
    drafts = [r for r in results if r["method"] == methods.DRAFT]
    best = max(drafts, key=lambda r: r["speedup_vs_plain"]) if drafts else None
    assisted = next((r for r in results if best and r["method"] == methods.HF_ASSISTED and r["k"] == best["k"]), None)
    return {
        "CPU": f"{env['cpu']} ({env['cpu_capability']})",
        "precision": env["dtype"],
        "draft vocabulary": str(doc["settings"].get("draft_vocab") or "all"),  # always recorded; text: N or "all"
        "plain tokens/s": round(plain["tokens_per_s"], 1),
        "best K": best["k"] if best else NONE_SHOWN,
        "speedup": round(best["speedup_vs_plain"], 2) if best else NONE_SHOWN,
        "c": NONE_SHOWN if best is None or best["c"] is None else round(best["c"], 3),
        "v(K)": NONE_SHOWN if best is None or best["verify_cost"] is None else round(best["verify_cost"], 2),
        "HF assisted at that K": f"{assisted['speedup_vs_plain']:.2f}×" if assisted else NO_HF_LANE,
        "= plain": bool(best and best["identical_to_plain"]),
        "prompts × tokens": f"{doc['settings']['prompts']} × {doc['settings']['max_new_tokens']}",
        "file": doc.get("file", ""),
    }


def _lane_name(row: dict) -> str:
    if row.get("tree"):
        name = f"tree {row['tree']} ({row['nodes']} nodes)"
        return name if row["method"] == methods.TREE else f"{row['method']} {name}"
    return f"{row['method']} · {row['k_schedule']}" if row.get("k_schedule") else row["method"]


def with_forwards(docs: dict[str, dict]) -> dict:
    """One bench document for benches of the same prompts under several forwards: the first forward's, as one bench
    reads, plus every forward's costs and results in `by_forward` and their comparison (`forward_table` prints it)."""
    first = next(iter(docs.values()))
    if len(docs) == 1:
        return first
    by_forward = {
        name: {key: doc[key] for key in ("environment", "forward", "costs", "results")} for name, doc in docs.items()
    }
    return {**first, "by_forward": by_forward, "forward_comparison": forward_comparison(docs)}


def forward_comparison(docs: dict[str, dict]) -> list[dict]:
    """Per forward: plain decoding's tokens/s (and its ratio to the last forward's, Hugging Face's when asked as
    lean,hf), the draft's c, v(K) at the draft lane's best K, and that lane's speedup over plain on the same forward."""
    rows = []
    for name, doc in docs.items():
        plain = next(r for r in doc["results"] if r["method"] == methods.PLAIN)
        drafts = [r for r in doc["results"] if r["method"] == methods.DRAFT]
        best = max(drafts, key=lambda r: r["speedup_vs_plain"]) if drafts else None
        costs = doc.get("costs") or {}
        rows.append(
            {
                "forward": name,
                "ran": doc.get("forward", {}),
                "plain_tokens_per_s": plain["tokens_per_s"],
                "c": costs.get("c"),
                "verify_relative": costs.get("verify_relative"),
                "c_in_run": best.get("c_in_run") if best else None,  # the best draft lane's own rounds
                "verify_in_run": best.get("verify_in_run") if best else None,
                "best_k": best["k"] if best else None,
                "best_speedup_vs_plain": best["speedup_vs_plain"] if best else None,
            }
        )
    reference = rows[-1]["plain_tokens_per_s"]
    for row in rows:
        row["plain_vs_last_forward"] = row["plain_tokens_per_s"] / reference
    return rows


def forward_table(doc: dict) -> str:
    """The forwards side by side, as Markdown."""
    fmt = lambda v, f: "–" if v is None else format(v, f)  # noqa: E731
    lines = [
        "| forward | plain tokens/s | × the last forward's | c | v(4) | best K | c in its rounds "
        "| verify in its rounds | draft speedup vs plain |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in doc["forward_comparison"]:
        relative = row["verify_relative"] or []
        v4 = relative[3] if len(relative) >= 4 else None
        lines.append(
            f"| {row['forward']} | {row['plain_tokens_per_s']:.1f} | {row['plain_vs_last_forward']:.2f}x | "
            f"{fmt(row['c'], '.3f')} | {fmt(v4, '.2f')} | {fmt(row['best_k'], 'd')} | "
            f"{fmt(row.get('c_in_run'), '.3f')} | {fmt(row.get('verify_in_run'), '.2f')} | "
            f"{fmt(row['best_speedup_vs_plain'], '.2f')}x |"
        )
    return "\n".join(lines)
