"""The workload options every measuring command shares: a bundled workload by name or a file (`--workload`), a sample
per category (`--per-category`), a category filter (`--category`) and Spec-Bench's second turns (`--second-turn`);
and the Spec-Bench report printed after the ranking (measure/spec_bench.py)."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from typing import TYPE_CHECKING

from specviz import methods
from specviz.errors import SpecvizError

if TYPE_CHECKING:
    from specviz.core.settings import RunSettings
    from specviz.engine.loading.models import ModelPair
    from specviz.measure.prompts import PromptRow, Workload


def add_workload_arguments(parser: argparse.ArgumentParser) -> None:
    """--workload, --per-category, --category, --second-turn (the positional file stays as it was)."""
    from specviz.measure.prompts import BUNDLED_WORKLOADS

    group = parser.add_argument_group("the workload")
    group.add_argument(
        "--workload",
        metavar="NAME|PATH",
        help=f"a bundled workload ({', '.join(BUNDLED_WORKLOADS)}) or a file; the same as the positional file",
    )
    group.add_argument(
        "--per-category",
        type=int,
        default=None,
        metavar="N",
        help="measure N rows of each category (tag), drawn by --seed; 0 = every row (default: 5 for Spec-Bench rows, "
        "every row otherwise)",
    )
    group.add_argument(
        "--category",
        action="append",
        default=[],
        metavar="C",
        help="only this category (a tag, or an MT-bench subcategory such as writing); repeat for several",
    )
    group.add_argument(
        "--second-turn",
        action="store_true",
        help="Spec-Bench's two-turn rows (MT-bench) ask their second turn, after the target's own greedy answer to the "
        "first; single-turn rows are unchanged",
    )


def workload_source(args: argparse.Namespace) -> str:
    """The workload named by --workload or the positional file (one of them, or both the same)."""
    given = [value for value in (getattr(args, "prompts_file", None), getattr(args, "workload", None)) if value]
    if not given:
        raise SpecvizError("Give a workload: a file, or --workload NAME (spec-bench, code, prose, structured, copy).")
    if len(set(given)) > 1:
        raise SpecvizError(f"Two workloads given ({given[0]!r} and --workload {given[1]!r}): give one.")
    return given[0]


def selected_workload(args: argparse.Namespace) -> Workload:
    """The workload read, filtered by --category and sampled by --per-category (with --seed); says on stderr how many
    rows of how many it keeps."""
    from specviz.measure.prompts import read_workload
    from specviz.measure.spec_bench import (
        DEFAULT_PER_CATEGORY,
        is_spec_bench,
        sample_per_category,
        select_categories,
    )

    workload = read_workload(workload_source(args))
    rows = select_categories(workload.rows, getattr(args, "category", []))
    per_category = getattr(args, "per_category", None)
    if per_category is None:
        per_category = DEFAULT_PER_CATEGORY if is_spec_bench(rows) else 0
    sampled = sample_per_category(rows, per_category, getattr(args, "seed", 0))
    if len(sampled) < len(workload.rows):
        print(
            f"measuring {len(sampled)} of the workload's {len(workload.rows)} rows"
            + (f" ({per_category} per category, drawn with seed {getattr(args, 'seed', 0)})" if per_category else ""),
            file=sys.stderr,
        )
    return replace(workload, rows=tuple(sampled))


def second_turns(args: argparse.Namespace, pair: ModelPair, rows, base: RunSettings) -> list[PromptRow]:
    """With --second-turn: each two-turn row asks its second turn after the target's own greedy answer to its first
    (plain decoding, base.max_new_tokens, stopping at EOS), in the target's chat template where the run uses it."""
    if not getattr(args, "second_turn", False):
        return list(rows)
    from specviz.core.sampling import SamplingSettings
    from specviz.engine.decode import chat_wrapped, generate
    from specviz.measure.spec_bench import multi_turn, with_second_turn

    chat = getattr(args, "chat", False)
    answer_settings = replace(base, method=methods.PLAIN, sampling=SamplingSettings(), stop_at_eos=True)
    two = multi_turn(rows)
    if not two:
        raise SpecvizError("--second-turn: no row of this workload has a second turn (Spec-Bench's MT-bench rows do).")
    print(f"answering the first turn of {len(two)} two-turn row(s) with the target", file=sys.stderr)
    out = []
    for row in rows:
        if len(row.turns) < 2:
            out.append(row)
            continue
        wrap = chat if row.chat is None else row.chat
        first = chat_wrapped(pair, row.turns[0]) if wrap else row.turns[0]
        answer = generate(pair, first, answer_settings).text
        out.append(with_second_turn(row, conversation(pair, row.turns, answer, wrap)))
    return out


def conversation(pair: ModelPair, turns, answer: str, chat: bool) -> str:
    """The first turn, the target's answer and the second turn: through the chat template, or as plain text."""
    from specviz.measure.spec_bench import second_turn_prompt

    if not chat:
        return second_turn_prompt(turns[0], answer, turns[1])
    messages = [
        {"role": "user", "content": turns[0]},
        {"role": "assistant", "content": answer.strip()},
        {"role": "user", "content": turns[1]},
    ]
    return pair.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)


def spec_bench_report(ranked, results, rows, args: argparse.Namespace, skipped=()) -> dict | None:
    """For Spec-Bench rows: print each category's best method, the comparison with the published table and the
    prefill apart from decoding; return the JSON section (None for other workloads)."""
    from specviz.measure.spec_bench import is_spec_bench, published_tables, spec_bench_document

    if not is_spec_bench(rows):
        return None
    table = published_tables()[0]
    counts: dict[str, int] = {}
    for row in rows:
        counts[row.tag] = counts.get(row.tag, 0) + 1
    sampled = {
        "per_category": counts,
        "seed": getattr(args, "seed", 0),
        "second_turn": bool(getattr(args, "second_turn", False)),
        "question_ids": [row.row_id for row in rows],
        "skipped": list(skipped),  # "question N: why" for each row the pair could not run (too long for its context)
    }
    doc = spec_bench_document(ranked, results, table, sampled)
    for line in report_lines(doc, table):
        print(line)
    return doc


def report_lines(doc: dict, table) -> list[str]:
    """The Spec-Bench report as text lines (per category best, the ρ of each profile and ranking, prefill)."""
    lines = ["", f"Spec-Bench per category (published: {table.title}; {table.model}, {table.gpu}, {table.date}):"]
    for row in doc["category_ranking"]:
        if row["best"]:
            published = [m for m, v in table.speedups.items() if row["tag"] in v]
            top = max(published, key=lambda m: table.speedups[m][row["tag"]]) if published else None
            theirs = f"; published best {top} {table.speedups[top][row['tag']]:.2f}x" if top else ""
            lines.append(f"  {row['tag']}: best {row['setting']} {_x(row['speedup'])}{theirs}")
    for entry in doc["profile_agreement"]:
        rho = "n/a (fewer than 3 shared categories)" if entry["rho"] is None else f"{entry['rho']:+.2f}"
        lines.append(
            f"  profile of {entry['method']} vs {entry['published_method']}: Spearman ρ {rho} over "
            f"{len(entry['categories'])} categories (best here {entry['measured_best']}, published "
            f"{entry['published_best']}; worst here {entry['measured_worst']}, published {entry['published_worst']})"
        )
    for entry in doc["ranking_agreement"]:
        if len(entry["methods"]) > 1:
            rho = "n/a" if entry["rho"] is None else f"{entry['rho']:+.2f}"
            lines.append(f"  ranking in {entry['category']} ({', '.join(entry['methods'])}): ρ {rho}")
    lines.append(
        "  prefill apart from decoding (mean per run; before round 1 = the prompt's prefill and the drafter's set-up):"
    )
    for row in doc["prefill"]:
        decode = "-" if row["decode_tokens_per_s"] is None else f"{row['decode_tokens_per_s']:.1f} tokens/s"
        lines.append(
            f"    {row['category']:<15} {row['method']:<12} prompt {row['prompt_chars']:,.0f} chars, "
            f"before round 1 {row['prefill_s']:.2f} s, decode {decode}"
        )
    return lines


def _x(value) -> str:
    return "-" if value is None else f"{value:.2f}x"


def with_section(text: str, name: str, section: dict | None) -> str:
    """A JSON document's text with one more top-level section (unchanged when section is None)."""
    if section is None:
        return text
    return json.dumps({**json.loads(text), name: section}, indent=2, ensure_ascii=False)
