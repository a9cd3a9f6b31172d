"""python -m specviz theory: the calculator's numbers on the command line (text or JSON).

Wire it in with `add_theory_parser(subparsers)`; the handler returns an exit code and raises SpecvizError (a
SettingsError) for bad input, which the main CLI prints as one `error: ...` line.
"""

from __future__ import annotations

import argparse
import json
import math
import sys

from specviz.core.theory import MAX_K, TheoryInputs, VerifyCost, analyse, formulas


def add_theory_parser(subparsers) -> argparse.ArgumentParser:
    """Register `theory` on an argparse subparsers object."""
    parser = subparsers.add_parser(
        "theory",
        help="expected tokens, speedup, operations factor, best K and break-even α for given α, K, c",
        description="Closed-form speculative decoding numbers (Leviathan et al. 2023). No model is loaded.",
    )
    parser.add_argument("--alpha", type=float, required=True, help="acceptance rate α, 0..1")
    parser.add_argument("--k", type=int, default=4, help=f"draft tokens per round, 1..{MAX_K} (default 4)")
    parser.add_argument("--c", type=float, default=0.0, help="one draft step / one target step (default 0)")
    parser.add_argument(
        "--c-hat", type=float, default=None, help="draft ops / target ops for the ops factor (default: c)"
    )
    parser.add_argument(
        "--verify-cost",
        type=float,
        default=None,
        help="cost of the verify pass over K drafts, in target steps (e.g. 1.3); gives speedup_measured",
    )
    parser.add_argument("--json", action="store_true", help="print the numbers as one JSON object")
    parser.set_defaults(handler=cmd_theory)
    return parser


def cmd_theory(args: argparse.Namespace) -> int:
    result = analyse(TheoryInputs(alpha=args.alpha, k=args.k, c=args.c, c_hat=args.c_hat))
    doc = result.to_dict()
    # A single --verify-cost is v(K) at the chosen K only: it changes the speedup at that K, not the K search.
    for key in (
        "best_k_measured",
        "best_speedup_measured",
        "break_even_alpha_measured",
        "break_even_alpha_at_k_measured",
    ):
        doc.pop(key)
    doc.update(speedup_measured=None, verify_cost=None, verify_model="ideal")
    if args.verify_cost is not None:
        v = VerifyCost.measured([args.verify_cost] * args.k)  # validates (> 0)
        measured = analyse(TheoryInputs(alpha=args.alpha, k=args.k, c=args.c, c_hat=args.c_hat, verify=v))
        doc.update(speedup_measured=measured.speedup, verify_cost=args.verify_cost, verify_model="given")
    if args.json:
        print(strict_json(doc))
        return 0
    print(render_text(result, doc))
    return 0


def strict_json(doc: dict) -> str:
    """The document as strict JSON: a value that overflowed (inf, nan) is null, and stderr names it."""
    overflowed = [key for key, value in doc.items() if isinstance(value, float) and not math.isfinite(value)]
    if overflowed:
        print(f"note: {', '.join(overflowed)} overflowed (not a finite number): written as null", file=sys.stderr)
    clean = {key: None if key in overflowed else value for key, value in doc.items()}
    return json.dumps(clean, indent=2, allow_nan=False)


def render_text(result, doc: dict) -> str:
    lines = [f"α = {doc['alpha']:g}, K = {doc['k']}, c = {doc['c']:g}, ĉ = {doc['c_hat']:g}"]
    f = formulas(result)
    lines += [
        f"expected tokens per round   {doc['expected_tokens']:.3f}    {f['expected_tokens']}",
        f"speedup (ideal verify)      {doc['speedup']:.3f}x   {f['speedup']}",
    ]
    if doc["speedup_measured"] is not None:
        lines.append(
            f"speedup (verify = {doc['verify_cost']:g})     {doc['speedup_measured']:.3f}x   "
            f"S = E / (K·c + v) = {doc['expected_tokens']:.3f} / ({doc['k']}·{doc['c']:g} + {doc['verify_cost']:g})"
        )
    be, at_k = doc["break_even_alpha"], doc["break_even_alpha_at_k"]
    at_k_label = f"break-even α at K = {doc['k']}"
    lines += [
        f"operations factor           {doc['ops_factor']:.3f}    {f['ops_factor']}",
        f"best K (1..{MAX_K}, ideal)       {doc['best_k']} -> {doc['best_speedup']:.3f}x",
        f"break-even α (any K)        {'none (c >= 1: no K pays)' if be is None else f'{be:.3f}'}"
        f"    (with ideal verify: any α > c pays; K = 1 gives (1 + α)/(1 + c))",
        f"{at_k_label:<28}{'none' if at_k is None else f'{at_k:.3f}'}"
        f"    (ideal verify: E(α, {doc['k']}) = {doc['k']}·{doc['c']:g} + 1)",
    ]
    return "\n".join(lines)
