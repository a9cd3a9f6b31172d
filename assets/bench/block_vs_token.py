"""τ at T = 1, block against token-by-token verification, the same prompts and seeds (one run per prompt, seed and
verifier): `PYTHONPATH=. python assets/bench/block_vs_token.py pystdlib|smollm2` prints the JSON kept beside it, with
a 95% bootstrap interval of the difference over the runs."""

from __future__ import annotations

import json
import random
import sys

import torch

from specviz.core.sampling import SamplingSettings
from specviz.core.settings import RunSettings
from specviz.engine.decode import chat_wrapped, generate
from specviz.engine.loading.catalogue import find_pair
from specviz.engine.loading.models import load_pair

SETUP = {  # pair -> prompts file, draft vocabulary, prompts, seeds
    "pystdlib": ("assets/workloads/code.jsonl", 1024, 10, 3),
    "smollm2": ("assets/workloads/chat-heldout.jsonl", 16384, 8, 2),
}


def tau(rows: list[dict], verifier: str) -> float:
    return sum(r[verifier][0] for r in rows) / sum(r[verifier][1] for r in rows)


def main(name: str) -> dict:
    torch.set_num_threads(1)
    file, vocab, n, seeds = SETUP[name]
    spec = find_pair(name)
    pair = load_pair(*spec.sources(), device="cpu")
    prompts = [json.loads(line)["prompt"] for line in open(file)][:n]
    prompts = [chat_wrapped(pair, p) for p in prompts] if spec.chat else prompts
    rows = []
    for prompt in prompts:
        for seed in range(seeds):
            row = {}
            for verifier in ("token", "block"):
                settings = RunSettings(
                    method="draft", k=4, max_new_tokens=48, seed=seed, sampling=SamplingSettings(temperature=1.0),
                    verifier=verifier, draft_vocab=vocab, stop_at_eos=False,
                )  # fmt: skip
                totals = generate(pair, prompt, settings).totals
                row[verifier] = (totals.committed, totals.rounds)
            rows.append(row)
    rng = random.Random(0)
    diffs = sorted(
        tau(sample, "block") - tau(sample, "token")
        for sample in ([rng.choice(rows) for _ in rows] for _ in range(2000))
    )
    return {
        "pair": name, "runs": len(rows), "tau_token": tau(rows, "token"), "tau_block": tau(rows, "block"),
        "difference_95": [diffs[50], diffs[1949]], "k": 4, "temperature": 1.0, "max_new_tokens": 48,
        "draft_vocab": vocab,
    }  # fmt: skip


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1])))
