"""`python -m specviz pairs [--install NAME] [--json]`: the pairs by name, whether each is installed, its size and
its drafters; --install converts a pair whose target comes from a package (smollm2) to the cache now."""

from __future__ import annotations

import argparse
import json
import sys
import time

from specviz.errors import SpecvizError

STATES = {True: "yes", None: "installed, not converted yet (converts on first use)", False: "no"}


def add_pairs_parser(commands) -> None:
    pairs = commands.add_parser("pairs", help="list the model pairs by name: installed?, size, drafters")
    pairs.add_argument("--install", metavar="NAME", default=None, help="convert this pair's target to the cache now")
    pairs.add_argument("--json", action="store_true", help="print the list as JSON")
    pairs.set_defaults(handler=cmd_pairs)


def pair_rows() -> list[dict]:
    from specviz.engine.loading.catalogue import CATALOGUE
    from specviz.engine.loading.install import INSTALL_COMMAND
    from specviz.engine.loading.models import recorded_name

    rows = []
    for spec in CATALOGUE:
        state = spec.installed()
        rows.append(
            {
                "name": spec.key,
                "installed": STATES[state] if spec.package or spec.offline else "from the Hugging Face hub",
                "size": spec.size or "–",
                "drafters": list(spec.drafters),
                "target": recorded_name(spec.target_source),
                "draft": recorded_name(spec.draft_source),
                "chat_template": spec.chat,
                "install": INSTALL_COMMAND if spec.package and state is False else None,
                "note": spec.note,
            }
        )
    return rows


def cmd_pairs(args: argparse.Namespace) -> int:
    from specviz.engine.loading.catalogue import find_pair

    if args.install is not None:
        spec = find_pair(args.install)
        if spec.package is None:
            raise SpecvizError(f"The pair {spec.key} has nothing to install: it loads as it is.")
        start = time.perf_counter()
        if spec.installed() is not True:  # converted already: sources() only finds the cache
            print(f"converting {spec.key} (checking the GGUF's sha256, dequantizing, saving)…", file=sys.stderr)
        target, _ = spec.sources()
        print(f"{spec.key}: {target} ({time.perf_counter() - start:.1f} s)")
        return 0
    rows = pair_rows()
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    for row in rows:
        print(f"{row['name']}  installed: {row['installed']}")
        print(f"    size: {row['size']}; drafters: {', '.join(row['drafters'])}")
        print(f"    target: {row['target']}" + (f" ← draft {row['draft']}" if row["draft"] else " (no draft model)"))
        if row["install"]:
            print(f"    install: {row['install']}")
        print(f"    {row['note']}")
    return 0
