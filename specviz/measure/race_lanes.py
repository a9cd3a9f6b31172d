"""The race page's decisions, without Streamlit: which lanes are offered and raced, what is said about those left out,
and the notes beside a finished race (pages/race.py draws; tests/measure/test_race_lanes.py checks)."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from specviz import methods
from specviz.engine.loading.models import HEAD_KINDS
from specviz.measure.race import MAX_PICKED, RACE_TREES, tree_label
from specviz.measure.timing import DISAGREES, against_bench, agreement_words
from specviz.viz.explain import BF16_GREEDY_NOTE
from specviz.viz.notes import CAPTION, WARNING, Note

EVERY, THREE = "every lane offered", "up to three of my choice, beside plain"
NO_TREE = "no tree lane"
TREE_CHOICES = {NO_TREE: ()} | {tree_label(shape): shape for shape in RACE_TREES}


def runnable_lanes(heads: Collection[str], exit_refused: bool, crosses: bool = False) -> list[str]:
    """The lanes this target can race: a feature head's lane only where its head was found beside the target, early
    exit only where its E fits the target's layers; with a draft that speaks another tokenizer (crosses), its lanes
    are TLI, SLEM and Hugging Face's universal assisted generation instead of the ones that compare token ids."""
    lanes = methods.runnable_with(methods.LANES, True, crosses, methods.CROSSING_LANES[1:])
    runnable = methods.with_heads(lanes, heads)
    return [lane for lane in runnable if not (exit_refused and methods.get(lane).exits_early)]


def picked_words(lanes: Sequence[str]) -> str:
    """Under the three-lane picker: how many are chosen, which, and how to choose another."""
    return (
        f"{len(lanes)} of at most {MAX_PICKED} chosen"
        + (f": {', '.join(methods.lane_label(lane) for lane in lanes)}" if lanes else "")
        + ", each beside plain decoding. Remove one to choose another."
    )


def missing_heads_words(heads: Collection[str], offered: str = "lanes") -> str | None:
    """Which feature heads are not beside this target (so the `offered` that draft with them, the race's lanes or
    the sidebar's proposers, are not offered) and the command that trains them; None when every head is there."""
    missing = [lane for lane in methods.LANES if methods.get(lane).loads_head and lane not in heads]
    if not missing:
        return None
    names = [methods.label(lane) for lane in missing]
    listed = f"{', '.join(names[:-1])} or {names[-1]}" if len(names) > 1 else names[0]
    stages = " | ".join(HEAD_KINDS[lane].stage for lane in missing)
    return (
        f"No {listed} sit beside this target, so the {offered} that draft with them are not offered "
        f"(specviz trains them for the bundled toy target only: `python -m specviz train-tiny {stages}`)."
    )


def with_plain(lanes: Sequence[str], refusals: Mapping[str, str]) -> tuple[list[str], list[str]]:
    """The lanes raced: those picked less those refused at these settings, plain always first among them if it was
    not picked; and a caption for each lane left out and for plain added."""
    notes = [f"{methods.lane_label(lane)} is left out of this race. {why}" for lane, why in refusals.items() if why]
    kept = [lane for lane in lanes if not refusals.get(lane)]
    if methods.PLAIN not in kept:
        notes.append("Plain decoding is always raced too: it is the baseline every speedup is measured against.")
        kept = [methods.PLAIN, *kept]
    return kept, notes


def with_tree(lanes: Sequence[str], tree_pick: str, picking: str) -> tuple[list[str], tuple[int, ...], Note | None]:
    """The lanes with the chosen tree lane added, its shape (() for none) and what is said: a fourth speculative lane
    in a chosen race is left out, with a warning; an added tree lane is compared with the chain at its depth."""
    tree = TREE_CHOICES[tree_pick]
    if not tree:
        return list(lanes), (), None
    if picking == THREE and len([lane for lane in lanes if lane != methods.PLAIN]) >= MAX_PICKED:
        return (
            list(lanes),
            (),
            Note(
                WARNING,
                f"The tree lane would be a fourth speculative lane: remove one of the {MAX_PICKED} chosen above to "
                "race it, or choose no tree lane. It is left out of this race.",
            ),
        )
    return (
        [*lanes, methods.TREE],
        tree,
        Note(
            CAPTION,
            f"The tree lane drafts {tree_pick.removeprefix('tree ')} and verifies every node in one target pass: its "
            f"depth, {len(tree)}, is the chain's K at equal depth; compare it with the draft-model lane at that K.",
        ),
    )


def untrusted_words(what: str, doubts: Sequence[str]) -> str | None:
    """One warning listing why some of `what` ("lanes' speedups", "sweep points") are not to be trusted, or None."""
    return f"Some {what} are not to be trusted: " + "; ".join(doubts) + "." if doubts else None


def bench_note(timings: Mapping, env: dict, settings, recorded: Sequence[dict]) -> Note | None:
    """The draft-model lane's speedup against the recorded bench for the same machine and settings: a warning when
    they disagree, a caption otherwise; None when the draft-model lane was not raced."""
    if methods.DRAFT not in timings:
        return None
    draft = timings[methods.DRAFT]
    sampling = settings.sampling
    bench = against_bench(
        draft.speedup, draft.interval, env, settings.k, settings.draft_vocab, sampling.temperature, recorded
    )
    return Note(WARNING if bench.verdict == DISAGREES else CAPTION, f"The draft-model lane: {agreement_words(bench)}")


def precision_note(greedy: bool, dtype) -> str | None:
    """Greedy outside float32: why the lanes' texts may part at a near-tie (None in float32 or when sampling)."""
    if greedy and dtype != "float32":
        return f"In {str(dtype).removeprefix('torch.')}, {BF16_GREEDY_NOTE} (Precision is in the sidebar.)"
    return None
