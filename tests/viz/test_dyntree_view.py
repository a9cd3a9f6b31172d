"""A dynamic (EAGLE-2) tree round on the page: the tree chart says how many nodes were scored, expanded and kept,
marks the expanded nodes (⊕) and each node's pruned children (+n) with the draft's own q, and the draft sentence
counts them (a real round of the bundled pair)."""

import pytest

from specviz import methods
from specviz.core.dyntree import DynamicTree
from specviz.core.settings import RunSettings
from specviz.engine.decode import generate
from specviz.engine.loading.models import load_pair
from specviz.viz import steps
from specviz.viz import tree_charts as trees
from specviz.viz.explain import draft_sentence
from specviz.viz.run_notes import settings_summary


@pytest.fixture(scope="module")
def trace():
    pair = load_pair(device="cpu", draft=None)
    settings = RunSettings(method=methods.EAGLE, dynamic=DynamicTree(8, 3, 3), max_new_tokens=8, stop_at_eos=False)
    return generate(pair, "def add(a, b):\n    return", settings)


def test_the_chart_title_counts_scored_expanded_kept(trace):
    r = trace.rounds[0]
    chart = trees.tree_chart(r, steps.Step(steps.DRAFT), trace.settings.dynamic).to_dict()
    title = " ".join(chart["title"]["text"])  # wrapped in lines
    assert "dynamic:8,3,3" in title
    assert f"{len(r.scored)} scored, {sum(c.expanded for c in r.scored)} expanded (⊕), 8 kept" in title
    assert (len(r.scored), sum(c.expanded for c in r.scored)) == (3 + 2 * 9, 6)


def test_nodes_show_the_drafts_q_expanded_marks_and_pruned_counts(trace):
    r = trace.rounds[0]
    nodes, _ = trees.tree_frames(r, steps.Step(steps.DRAFT))
    by_id = dict(zip(nodes["id"], nodes["label"]))
    expanded = {c.node for c in r.scored if c.expanded and c.node >= 0}
    assert expanded and all(by_id[i].split("\n")[0].endswith("⊕") for i in expanded)
    assert not any(by_id[n.id].split("\n")[0].endswith("⊕") for n in r.nodes if n.id not in expanded)
    assert not any(by_id[n.id].endswith("q=1.00") for n in r.nodes)  # the draft's q, not the one-hot 1
    pruned_total = len(r.scored) - len(r.nodes)
    counted = sum(int(part[1:]) for label in nodes["label"] for part in label.split() if part.startswith("+"))
    assert counted == pruned_total


def test_the_draft_sentence_counts_them_and_the_summary_names_the_tree(trace):
    r = trace.rounds[0]
    said = draft_sentence(trace, r)
    assert f"scored {len(r.scored)} nodes" in said and f"kept the {len(r.nodes)} best" in said
    assert f"expanded {sum(c.expanded for c in r.scored)} of them" in said
    assert "judged one-hot" in said
    assert "tree dynamic:8,3,3" in settings_summary(trace.settings)


def test_the_key_adds_the_dynamic_marks_only_for_a_dynamic_round(trace):
    words = [w for _, _, w in trees.tree_key(dynamic=True)]
    assert "expanded (its top-k children scored)" in words and "children pruned" in words
    assert "children pruned" not in [w for _, _, w in trees.tree_key()]
