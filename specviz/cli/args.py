"""The command line's shared readers and writers: settings from the options, number lists, the summary table, files.

Both the in-process commands (cli/run.py, measure.py, bench.py) and the server ones (cli/remote.py) use them, so they
live below both.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

from specviz import methods
from specviz.core import schedule
from specviz.core.dyntree import parse_dynamic
from specviz.core.quantize import QuantOptions
from specviz.core.sampling import SamplingSettings
from specviz.core.settings import DEFAULT_EXIT_LAYER, FORWARD_AUTO, RunSettings, TreeSpec, tree_fields
from specviz.core.suffix_tree import SuffixOptions
from specviz.core.verify import TOKEN
from specviz.errors import SpecvizError


def tree_shapes(args: argparse.Namespace) -> list[TreeSpec]:
    """Every --tree given: a static shape as a tuple of children per depth, or a dynamic tree (dynamic:B,D,K)."""
    specs = []
    for text in getattr(args, "tree", None) or []:
        dynamic = parse_dynamic(text)
        specs.append(tuple(int_list(text, "--tree")) if dynamic is None else dynamic)
    return specs


def one_tree(args: argparse.Namespace) -> TreeSpec:
    shapes = tree_shapes(args)
    if len(shapes) > 1:
        raise SpecvizError("Give one --tree shape here (only bench compares several).")
    return shapes[0] if shapes else ()


def settings_from(args: argparse.Namespace, method: str) -> RunSettings:
    """The run's settings; a --tree shape turns the draft-model method into tree speculation, and makes a feature head
    (methods.BRANCHING) draft a tree of its top tokens (K = the tree's depth)."""
    tree = one_tree(args)
    if tree and method == methods.DRAFT:
        method = methods.TREE
    takes = methods.get(method).takes_tree if method in methods.REGISTRY else False
    fields = tree_fields(tree) if tree else {}
    if not (takes and tree):  # K is the tree's depth only where the method drafts the tree
        fields["k"] = int_list(args.k, "--k")[0]
    return RunSettings(
        method=method,
        **fields,
        sampling=SamplingSettings(args.temperature, args.top_k, args.top_p),
        max_new_tokens=args.max_new_tokens,
        seed=args.seed,
        ngram_min=args.ngram_min,
        ngram_max=args.ngram_max,
        suffix=suffix_options(args),
        quant=quant_options(args),
        exit_layer=exit_layer_of(args),
        forward=getattr(args, "forward", FORWARD_AUTO),
        verifier=getattr(args, "verify", TOKEN),
        **schedule_of(args),
    )


def exit_layer_of(args: argparse.Namespace) -> int:
    """--exit-layer E as given (the pair's own E when it names one; the general default for a bare --target, which
    names none); 0 or less is refused here, not replaced by a default."""
    given = getattr(args, "exit_layer", None)
    if given is None:
        return DEFAULT_EXIT_LAYER
    if given < 1:
        raise SpecvizError(
            f"--exit-layer {given}: E is how many of the target's first layers draft, from 1 to L - 1 (L: the "
            "target's layers); leave it out for the pair's own E."
        )
    return given


def suffix_options(args: argparse.Namespace) -> SuffixOptions:
    """The suffix method's options from --suffix-* (the defaults where a command has none)."""
    d = SuffixOptions()
    return SuffixOptions(
        max_tree_depth=getattr(args, "suffix_depth", d.max_tree_depth),
        max_spec_factor=getattr(args, "suffix_factor", d.max_spec_factor),
        max_spec_offset=getattr(args, "suffix_offset", d.max_spec_offset),
        min_token_prob=getattr(args, "suffix_min_prob", d.min_token_prob),
        max_cached_requests=getattr(args, "suffix_cached", d.max_cached_requests),
    )


def quant_options(args: argparse.Namespace) -> QuantOptions:
    """The quantized self-draft's options from --bits, --quant-group and --quant-head (the defaults where a command has
    none)."""
    d = QuantOptions()
    return QuantOptions(
        bits=getattr(args, "bits", d.bits),
        group=getattr(args, "quant_group", d.group),
        head_bits=getattr(args, "quant_head", d.head_bits),
    )


def schedule_of(args: argparse.Namespace, name: str | None = None, threshold: str | None = None) -> dict:
    """The RunSettings fields of --k-schedule and --confidence-threshold (one value each; bench passes each of its
    own in turn). The threshold is read only for the confidence schedule."""
    name = (name or getattr(args, "k_schedule", None) or schedule.CONSTANT).strip().lower()
    if name not in schedule.SCHEDULES:
        raise SpecvizError(f"--k-schedule takes {', '.join(schedule.SCHEDULES)}; got {name!r}.")
    if name != schedule.CONFIDENCE:
        return {"k_schedule": name}
    value, fitted = schedule.parse_threshold(threshold or getattr(args, "confidence_threshold", None) or "0.4")
    return {"k_schedule": name, "confidence_threshold": value, "fit_threshold": fitted}


def schedule_variants(args: argparse.Namespace) -> list[dict]:
    """bench's --k-schedule and --confidence-threshold lists: one variant per schedule, and per threshold for
    confidence (e.g. constant,heuristic,confidence with 0.4,fitted: four)."""
    names = [n.strip() for n in str(args.k_schedule or schedule.CONSTANT).split(",") if n.strip()]
    thresholds = [t.strip() for t in str(args.confidence_threshold or "0.4").split(",") if t.strip()]
    if not names:
        raise SpecvizError(f"--k-schedule takes any of {', '.join(schedule.SCHEDULES)} (comma-separated).")
    variants = []
    for name in names:
        for threshold in thresholds if name.strip().lower() == schedule.CONFIDENCE else [None]:
            variants.append(schedule_of(args, name, threshold))
    return variants


def int_list(text: str, option: str) -> list[int]:
    try:
        values = [int(part) for part in str(text).split(",") if part.strip()]
    except ValueError:
        raise SpecvizError(f"{option} takes whole numbers separated by commas (e.g. 2,4,8); got {text!r}.") from None
    if not values:
        raise SpecvizError(f"{option} needs at least one value.")
    return values


def check_writable(path: str | None, option: str) -> None:
    """Refuse, before any run, an output path that cannot be written (no such folder, a directory, no permission);
    an existing file is opened for append only, so it is not truncated here."""
    if not path:
        return
    target = Path(path)
    folder = target.parent
    if target.is_dir():
        example = target / f"results.{option.lstrip('-')}"
        raise SpecvizError(f"{option} {path!r} is a directory: give a file name, e.g. {str(example)!r}.")
    if not folder.is_dir():
        raise SpecvizError(f"{option} {path!r}: the folder {str(folder)!r} does not exist. Create it or pick another.")
    existed = target.exists()
    try:
        with open(target, "a", encoding="utf-8"):
            pass
    except OSError as exc:
        raise SpecvizError(f"{option} {path!r} cannot be written: {exc.strerror or exc}.") from exc
    if not existed:
        target.unlink(missing_ok=True)  # made only to try: the run writes it when it is done


def write_file(path: str, text: str) -> None:
    """Write text to path; if that fails, save it to a file in the current folder (or print it) before raising, so
    a finished run is never lost."""
    try:
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
    except OSError as exc:
        raise SpecvizError(f"Cannot write {path!r}: {exc.strerror or exc}. {rescue(path, text)}") from exc


def rescue(path: str, text: str) -> str:
    """Save text that could not go to path beside the current folder (or print it to stdout); say where it went."""
    spare = Path.cwd() / f"specviz-unsaved-{time.strftime('%Y%m%d-%H%M%S')}-{Path(path).name or 'output'}"
    try:
        with open(spare, "x", encoding="utf-8") as handle:
            handle.write(text)
        return f"The results were saved to {str(spare)!r} instead."
    except OSError:
        print(text)
        return "The results were printed to stdout instead."


def write_all(outputs: list[tuple[str | None, Callable[[], str]]]) -> bool:
    """Write every (path, text maker) whose path is given; a failure (reported, its text rescued) does not stop the
    others. True when every one was written."""
    written = True
    for path, make in outputs:
        if not path:
            continue
        try:
            write_file(path, make())
        except SpecvizError as exc:
            print(f"error: {exc}", file=sys.stderr)
            written = False
    return written


def summary_table(rows: list[dict]) -> str:
    """The summary per tag, method and K as aligned text; figures not measured show as "–"."""
    num = lambda v, spec, width: f"{'–' if v is None else format(v, spec):>{width}}"  # noqa: E731
    header = (
        f"{'source':<8} {'tag':<12} {'method':<10} {'K':>2} {'prompts':>7} {'alpha':>6} {'95% CI':>13} {'tau':>5} "
        f"{'tok/s':>7} "
        f"{'plain':>7} {'speedup':>7} {'predicted':>9}"
    )
    lines = [header, "-" * len(header)]
    for r in rows:
        ci = "{:.2f}-{:.2f}".format(*r["alpha_ci"])
        lines.append(
            f"{r.get('source', 'specviz'):<8} {r['tag'][:12]:<12} {r['method']:<10} {r['k']:>2} {r['prompts']:>7} "
            f"{num(r['alpha'], '.3f', 6)} {ci:>13} "
            f"{num(r['tau'], '.2f', 5)} {num(r['tokens_per_s'], '.1f', 7)} {num(r['plain_tokens_per_s'], '.1f', 7)} "
            f"{num(r['speedup'], '.2f', 6)}x {num(r['predicted_speedup'], '.2f', 8)}x"
        )
    return "\n".join(lines)


def ranking_table(rows: list[dict]) -> str:
    """The whole family ranked per tag, best first (measure/ranking.py's rows) as aligned text; "–": not measured."""
    num = lambda v, spec, width: f"{'–' if v is None else format(v, spec):>{width}}"  # noqa: E731
    header = (
        f"{'tag':<12} {'#':>2} {'setting':<44} {'speedup':>8} {'95% CI':>13} {'alpha':>6} {'tau':>5} {'c':>7} "
        f"{'drafts/round':>12}"
    )
    lines = [header, "-" * len(header)]
    for r in rows:
        low, high = r["speedup_ci"]
        ci = "–" if r["speedup"] is None else f"{low:.2f}-{high:.2f}"
        lines.append(
            f"{r['tag'][:12]:<12} {r['rank']:>2} {r['setting'][:44]:<44} {num(r['speedup'], '.2f', 7)}x {ci:>13} "
            f"{num(r['alpha'], '.3f', 6)} {num(r['tau'], '.2f', 5)} {c_text(r):>7} "
            f"{num(r['drafts_per_round'], '.2f', 12)}"
        )
    return "\n".join(lines)


def c_text(row: dict) -> str:
    """A ranked row's c in the text table: the number, "dropped" when busy timings dropped it (the lines under the
    table say why), else "–" (not timed, not measured)."""
    if row["c"] is not None:
        return f"{row['c']:.3f}"
    return "dropped" if str(row.get("c_note", "")).startswith("dropped") else "–"


def check_ks(ks: list[int]) -> None:
    """Validate every K before anything slow is loaded."""
    for k in ks:
        RunSettings(k=k)


def check_outputs(args: argparse.Namespace) -> None:
    """Every --json / --csv path must be writable before anything runs, so no finished run is lost."""
    check_writable(getattr(args, "json_out", None), "--json")
    check_writable(getattr(args, "csv_out", None), "--csv")
