"""τ at T = 1, block against token-by-token verification, same prompts and seeds (one run per prompt, seed and verifier):
`PYTHONPATH=. python assets/bench/block_vs_token.py pystdlib|smollm2` prints the JSON kept beside it."""

import json, sys, statistics, random
import torch

torch.set_num_threads(1)
from specviz.core.sampling import SamplingSettings
from specviz.core.settings import RunSettings
from specviz.engine.decode import generate
from specviz.engine.loading.catalogue import find_pair
from specviz.engine.loading.models import load_pair, BUNDLED_TARGET, BUNDLED_DRAFT
from specviz.ui.controls import chat_prompt

name = sys.argv[1]
if name == "pystdlib":
    pair = load_pair(BUNDLED_TARGET, BUNDLED_DRAFT, device="cpu")
    file = "assets/workloads/code.jsonl"
    vocab = 1024
    n, seeds = 10, 3
else:
    t, d = find_pair("smollm2").sources()
    pair = load_pair(t, d, device="cpu")
    file = "assets/workloads/chat-heldout.jsonl"
    vocab = 16384
    n, seeds = 8, 2
prompts = [json.loads(l)["prompt"] for l in open(file)][:n]
if name != "pystdlib":
    prompts = [
        pair.tokenizer.apply_chat_template([{"role": "user", "content": p}], add_generation_prompt=True, tokenize=False)
        for p in prompts
    ]
rows = []
for i, prompt in enumerate(prompts):
    for seed in range(seeds):
        taus = {}
        for v in ("token", "block"):
            s = RunSettings(
                method="draft",
                k=4,
                max_new_tokens=48,
                seed=seed,
                sampling=SamplingSettings(temperature=1.0),
                verifier=v,
                draft_vocab=vocab,
                stop_at_eos=False,
            )
            tr = generate(pair, prompt, s)
            taus[v] = (tr.totals.committed, tr.totals.rounds)
        rows.append(taus)


def tau(rs, v):
    return sum(r[v][0] for r in rs) / sum(r[v][1] for r in rs)


rng = random.Random(0)
diffs = []
for _ in range(2000):
    sample = [rng.choice(rows) for _ in rows]
    diffs.append(tau(sample, "block") - tau(sample, "token"))
diffs.sort()
out = {
    "pair": name,
    "runs": len(rows),
    "tau_token": tau(rows, "token"),
    "tau_block": tau(rows, "block"),
    "difference_95": [diffs[50], diffs[1949]],
    "k": 4,
    "temperature": 1.0,
    "max_new_tokens": 48,
    "draft_vocab": vocab,
}
print(json.dumps(out))
