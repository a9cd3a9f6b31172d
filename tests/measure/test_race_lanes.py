"""The race page's decisions (measure/race_lanes.py): which lanes are offered and raced, what is said about those left
out, and the notes beside a finished race."""

from __future__ import annotations

from dataclasses import dataclass

from specviz import methods
from specviz.core.sampling import SamplingSettings
from specviz.core.settings import RunSettings
from specviz.measure import race_lanes as policy
from specviz.measure.race import MAX_PICKED, RACE_TREES, tree_label
from specviz.viz.notes import CAPTION, WARNING

HEADS = [lane for lane in methods.LANES if methods.get(lane).loads_head]


def test_a_head_lane_is_offered_only_where_its_head_is_found():
    bare = policy.runnable_lanes({}, exit_refused=False)
    assert not set(HEADS) & set(bare) and methods.PLAIN in bare and methods.EARLY_EXIT in bare
    with_eagle = policy.runnable_lanes({methods.EAGLE: "beside"}, exit_refused=False)
    assert set(with_eagle) - set(bare) == {methods.EAGLE}
    assert policy.runnable_lanes(dict.fromkeys(HEADS, "x"), exit_refused=False) == list(methods.LANES)


def test_an_exit_layer_beyond_the_target_leaves_the_early_exit_lanes_out():
    lanes = policy.runnable_lanes({}, exit_refused=True)
    assert lanes and not any(methods.get(lane).exits_early for lane in lanes)


def test_the_picker_words_count_and_name_the_chosen_lanes():
    assert policy.picked_words([]) == (
        f"0 of at most {MAX_PICKED} chosen, each beside plain decoding. Remove one to choose another."
    )
    words = policy.picked_words([methods.DRAFT, methods.SUFFIX])
    assert words.startswith(f"2 of at most {MAX_PICKED} chosen: {methods.lane_label(methods.DRAFT)}, ")


def test_missing_heads_are_listed_with_or_and_their_training_stages():
    words = policy.missing_heads_words({})
    names = [methods.label(lane) for lane in HEADS]
    assert words.startswith(f"No {', '.join(names[:-1])} or {names[-1]} sit beside this target")
    assert "`python -m specviz train-tiny " in words and " | " in words
    only_one = policy.missing_heads_words(dict.fromkeys(HEADS[1:], "x"))
    assert only_one.startswith(f"No {names[0]} sit beside") and " or " not in only_one.split("sit")[0]
    assert policy.missing_heads_words(dict.fromkeys(HEADS, "x")) is None


def test_refused_lanes_are_left_out_with_the_reason_and_plain_is_always_raced_first():
    lanes, notes = policy.with_plain([methods.DRAFT, methods.NGRAM], {methods.DRAFT: "", methods.NGRAM: "Too long."})
    assert lanes == [methods.PLAIN, methods.DRAFT]
    assert notes == [
        f"{methods.lane_label(methods.NGRAM)} is left out of this race. Too long.",
        "Plain decoding is always raced too: it is the baseline every speedup is measured against.",
    ]
    assert policy.with_plain([methods.DRAFT, methods.PLAIN], {}) == ([methods.DRAFT, methods.PLAIN], [])


def test_no_tree_adds_nothing():
    assert policy.with_tree([methods.PLAIN], policy.NO_TREE, policy.EVERY) == ([methods.PLAIN], (), None)


def test_a_tree_lane_is_added_and_compared_with_the_chain_at_its_depth():
    pick = tree_label(RACE_TREES[0])
    lanes, tree, note = policy.with_tree([methods.PLAIN, methods.DRAFT], pick, policy.THREE)
    assert lanes == [methods.PLAIN, methods.DRAFT, methods.TREE] and tree == RACE_TREES[0]
    assert note.level == CAPTION and f"its depth, {len(RACE_TREES[0])}, is the chain's K" in note.text


def test_a_fourth_speculative_lane_in_a_chosen_race_is_refused_with_a_warning_but_not_in_every_lane():
    three = [methods.PLAIN, methods.DRAFT, methods.NGRAM, methods.SUFFIX]
    pick = tree_label(RACE_TREES[1])
    lanes, tree, note = policy.with_tree(three, pick, policy.THREE)
    assert lanes == three and tree == () and note.level == WARNING and "fourth speculative lane" in note.text
    lanes, tree, _ = policy.with_tree(three, pick, policy.EVERY)
    assert lanes[-1] == methods.TREE and tree == RACE_TREES[1]


def test_untrusted_words_join_the_doubts_or_say_nothing():
    assert policy.untrusted_words("sweep points", []) is None
    assert policy.untrusted_words("lanes' speedups", ["a", "b"]) == (
        "Some lanes' speedups are not to be trusted: a; b."
    )


@dataclass(frozen=True)
class Timing:
    speedup: float
    interval: tuple[float, float] | None


SETTINGS = RunSettings(k=4, sampling=SamplingSettings(0.0), max_new_tokens=16)


ENV = {"target": "t", "draft": "d", "cpu": "x", "cpu_capability": "AVX2", "dtype": "float32", "torch_threads": 2}
DOC = {  # a recorded bench for the same pair, CPU and settings: the draft lane at K = 4, 2.0× (1.9–2.1)
    "environment": ENV,
    "settings": {"sampling": {"temperature": 0.0}, "draft_vocab": 0},
    "results": [{"method": methods.DRAFT, "k": 4, "speedup_vs_plain": 2.0, "speedup_range": [1.9, 2.1]}],
    "file": "bench.json",
}


def test_the_bench_note_is_absent_without_the_draft_lane():
    assert policy.bench_note({}, ENV, SETTINGS, [DOC]) is None


def test_a_draft_lane_that_disagrees_with_the_bench_is_a_warning_and_one_that_agrees_a_caption():
    slow = policy.bench_note({methods.DRAFT: Timing(1.0, (0.9, 1.1))}, ENV, SETTINGS, [DOC])
    assert slow.level == WARNING and slow.text.startswith("The draft-model lane: It disagrees with the recorded bench")
    held = policy.bench_note({methods.DRAFT: Timing(2.0, (1.8, 2.2))}, ENV, SETTINGS, [DOC])
    assert held.level == CAPTION and held.text.startswith("The draft-model lane: It agrees with the recorded bench")
    alone = policy.bench_note({methods.DRAFT: Timing(1.0, (0.9, 1.1))}, ENV, SETTINGS, [])
    assert alone.level == CAPTION and "Not comparable with a recorded bench" in alone.text


def test_the_precision_note_only_for_greedy_outside_float32():
    assert policy.precision_note(True, "float32") is None
    assert policy.precision_note(False, "torch.bfloat16") is None
    note = policy.precision_note(True, "torch.bfloat16")
    assert note.startswith("In bfloat16, ") and note.endswith("(Precision is in the sidebar.)")


def test_a_draft_with_its_own_tokenizer_races_tli_slem_and_hf_uag_instead_of_the_token_id_lanes():
    lanes = policy.runnable_lanes({}, exit_refused=False, crosses=True)
    assert {methods.TLI, methods.SLEM, methods.HF_UAG} <= set(lanes)
    assert not {methods.DRAFT, methods.HF_ASSISTED} & set(lanes)  # they compare token ids across tokenizers
    assert methods.PLAIN in lanes and methods.NGRAM in lanes  # the target's own lanes stay
