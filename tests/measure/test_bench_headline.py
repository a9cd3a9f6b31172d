"""The race page's table across CPU kinds: one row per committed bench file, the draft lane at its best K."""

import json

from specviz.measure.bench import NO_HF_LANE, NONE_SHOWN, headline, recorded_benches


def row(method, k, speedup, c=0.2, v=1.2, same=True):
    return {
        "method": method,
        "k": k,
        "tokens_per_s": 100.0 * speedup,
        "speedup_vs_plain": speedup,
        "c": c,
        "verify_cost": v,
        "identical_to_plain": same,
    }


def doc(vocab=1024):
    return {
        "environment": {"cpu": "Some CPU", "cpu_capability": "AVX2", "dtype": "float32"},
        "settings": {"prompts": 20, "max_new_tokens": 128} | ({"draft_vocab": vocab} if vocab else {}),
        "results": [row("plain", 0, 1.0), row("draft", 3, 1.7), row("draft", 5, 1.9, c=0.15, v=1.1)]
        + [row("hf_assisted", 3, 1.2), row("hf_assisted", 5, 1.3)],
    }


def test_the_headline_is_the_best_k_with_its_costs_and_hugging_face_at_that_k():
    line = headline(doc())
    assert line["CPU"] == "Some CPU (AVX2)"
    assert line["precision"] == "float32"
    assert line["draft vocabulary"] == "1024"
    assert line["plain tokens/s"] == 100.0
    assert line["best K"] == 5
    assert line["speedup"] == 1.9
    assert line["c"] == 0.15
    assert line["v(K)"] == 1.1
    assert line["HF assisted at that K"] == "1.30×"
    assert line["= plain"]
    assert headline(doc(vocab=0))["draft vocabulary"] == "all"


def test_a_bench_without_a_hugging_face_lane_or_costs_says_so_instead_of_none():
    bare = doc() | {"results": [row("plain", 0, 1.0), row("draft", 4, 1.6, c=None, v=None)]}
    line = headline(bare)
    assert line["HF assisted at that K"] == NO_HF_LANE == "no HF lane"
    assert line["c"] == line["v(K)"] == NONE_SHOWN
    assert None not in line.values() and "None" not in map(str, line.values())


def test_only_bench_files_that_race_the_draft_are_listed(tmp_path):
    (tmp_path / "a.json").write_text(json.dumps(doc()))
    lookup = doc() | {"results": [row("plain", 0, 1.0), row("ngram", 4, 1.3)]}
    (tmp_path / "b.json").write_text(json.dumps(lookup))
    sampled = doc() | {"settings": {"sampling": {"temperature": 1.0}, "prompts": 20, "max_new_tokens": 128}}
    (tmp_path / "c.json").write_text(json.dumps(sampled))  # not greedy: its speedup is not the table's
    assert [d["results"][1]["method"] for d in recorded_benches(tmp_path)] == ["draft"]


def test_the_race_names_each_tree_lane_with_its_real_node_count():
    from specviz.core.verify import tree_size
    from specviz.measure.race import RACE_TREES, tree_label

    assert tree_label((2, 2, 1, 1)) == "tree 2,2,1,1 (14 nodes)"
    assert tree_label((3, 2, 1, 1)) == "tree 3,2,1,1 (21 nodes)"
    for shape in RACE_TREES:
        assert f"({tree_size(shape)} nodes)" in tree_label(shape)
