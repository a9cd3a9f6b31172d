"""Command line: python -m specviz run | measure | bench | theory | serve | pairs | export-html | bench-player |
train-tiny.

Errors a user can fix are printed as one message, never a traceback."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from specviz.cli.bench import add_bench_parser
from specviz.cli.bench_player import add_bench_player_parser
from specviz.cli.export import add_export_parser
from specviz.cli.measure import add_measure_parser
from specviz.cli.model_args import resolve_pair
from specviz.cli.pairs import add_pairs_parser
from specviz.cli.run import add_run_parser
from specviz.cli.serve import add_serve_parser
from specviz.cli.theory import add_theory_parser
from specviz.errors import SpecvizError


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["train-tiny"]:
        from specviz.train import main as train_main

        return train_main(argv[1:])
    if argv[:1] == ["train"]:
        from specviz.train.pair import main as train_pair_main

        return train_pair_main(argv[1:])
    args = (export_parser() if argv[:1] == ["export-html"] else build_parser()).parse_args(argv)
    try:
        resolve_pair(args)
        return args.handler(args)
    except SpecvizError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (`specviz ... | head`): not an error of ours
        sys.stdout = open(os.devnull, "w")  # keeps the flush at exit quiet
        return 0


def export_parser() -> argparse.ArgumentParser:
    """The parser of export-html alone: it loads no model, so it skips the model arguments' imports (transformers)."""
    parser = argparse.ArgumentParser(prog="python -m specviz", description="Speculative decoding, traced.")
    add_export_parser(parser.add_subparsers(dest="command", required=True))
    return parser


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m specviz", description="Speculative decoding, traced.")
    commands = parser.add_subparsers(dest="command", required=True)
    add_run_parser(commands)
    add_measure_parser(commands)
    add_bench_parser(commands)
    add_theory_parser(commands)
    add_serve_parser(commands)
    add_export_parser(commands)
    add_pairs_parser(commands)
    add_bench_player_parser(commands)
    commands.add_parser("train-tiny", help="build the bundled model pair (see python -m specviz train-tiny --help)")
    commands.add_parser("train", help="train drafters for a real pair (see python -m specviz train --help)")
    return parser
