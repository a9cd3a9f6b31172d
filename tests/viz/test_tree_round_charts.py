"""Tree rounds on the page: the steps walk the children tried, the tree chart shows what the walk decided at each
step, the mask lets each node see the committed text and its ancestors only (from the bundled tree trace)."""

from specviz.core.trace_json import trace_from_json
from specviz.ui.render import TRACES_DIR
from specviz.viz import steps
from specviz.viz import tree_charts as trees
from specviz.viz.explain import commit_sentence, draft_sentence, resolve_sentence, tree_judge_sentence
from specviz.viz.round_charts import TITLE_CHARS, cache_frame


def round_two():
    trace = trace_from_json((TRACES_DIR / "tree-sibling-accepted.json").read_text())
    return trace, trace.rounds[1]  # ' is' rejected, its sibling ' ==' accepted against the residual, then a correction


def test_a_tree_round_judges_the_children_tried_in_order_and_names_the_node():
    trace, r = round_two()
    judged = [s.position for s in steps.round_steps(r) if s.phase == steps.JUDGE]
    assert judged == [0, 2, 3, 7, 11]  # id order is the order tried
    assert steps.step_label(r, steps.Step(steps.JUDGE, 2)) == " (node 3 of 14, depth 2)"
    rejection = steps.next_event(trace, steps.Cursor(1, 0), "rejection")
    assert steps.current_step(trace, rejection) == steps.Step(steps.JUDGE, 2)
    assert steps.url_params(trace, rejection) == {"round": "2", "phase": "judge", "pos": "3"}
    assert steps.cursor_from_params(trace, {"round": "2", "phase": "judge", "pos": "3"}) == rejection


def test_the_layout_gives_each_leaf_a_row_and_keeps_a_slot_for_the_extra_token():
    _, r = round_two()
    at = trees.tree_layout(r)
    leaves = [n.id for n in r.nodes if not r.children(n.id)] + [len(r.nodes)]
    assert sorted(at[i][1] for i in leaves) == list(range(len(leaves)))  # one row per leaf, none shared
    for node in r.nodes:
        kids = [at[c.id][1] for c in r.children(node.id)] + ([at[14][1]] if node.id == r.path[-1] else [])
        if kids:
            assert at[node.id][1] == sum(kids) / len(kids)
    assert at[len(r.nodes)][0] == len(r.path) + 1


def test_statuses_follow_the_walk_and_commit_highlights_the_path():
    _, r = round_two()

    def statuses(step):
        nodes, _ = trees.tree_frames(r, step)
        return dict(zip(nodes["id"], nodes["status"]))

    assert set(statuses(steps.Step(steps.DRAFT)).values()) == {"prefix", trees.DRAFTED}
    at_sibling = statuses(steps.Step(steps.JUDGE, 3))
    assert at_sibling[2] == "rejected"
    assert at_sibling[3] == "accepted"
    assert at_sibling[7] == trees.DRAFTED
    nodes, edges = trees.tree_frames(r, steps.Step(steps.COMMIT))
    assert dict(zip(nodes["id"], nodes["status"]))[14] == "correction"
    assert dict(zip(nodes["id"], nodes["status"]))[1] == trees.NOT_TRIED
    assert (edges["kind"] == "committed").sum() == len(r.path) + 1  # root -> path -> the correction
    current = nodes[nodes["now"]] if nodes["now"].any() else nodes.iloc[0:0]
    assert current.empty
    judged, _ = trees.tree_frames(r, steps.Step(steps.JUDGE, 2))
    assert judged[judged["now"]]["label"].item().split("\n")[0].endswith("◀")


def test_the_mask_lets_a_node_see_the_committed_text_its_ancestors_and_itself():
    _, r = round_two()
    frame = trees.mask_frame(r, committed=31)
    row = frame[frame["query"] == "8 ␣' @ 33"]  # node 8: depth 3, under ' ==' under ' mode'
    seen = set(row[row["status"] != "blocked"]["key"])
    assert seen == {"committed text", "1 ␣mode", "4 ␣==", "8 ␣'"}
    assert len(frame) == 14 * 15


def test_titles_fit_and_the_residual_after_a_rejected_sibling_marks_the_next_one():
    _, r = round_two()
    for phase in steps.PHASES:
        spec = trees.tree_chart(r, steps.Step(phase, 2 if phase == steps.JUDGE else None), (2, 2, 1, 1)).to_dict()
        assert all(len(line) <= TITLE_CHARS for line in spec["title"]["text"])
    spec = trees.sibling_residual_chart(r, r.nodes[2]).to_dict()
    rows = next(iter(spec["datasets"].values()))
    assert [row["chosen"] for row in rows if row["token"].startswith("␣==")] == [True]
    assert trees.sibling_residual_chart(r, r.nodes[11]) is not None  # the last child: the correction's residual
    assert [t[2] for t in trees.tree_key()][:3] == [trees.DRAFTED, "accepted", "rejected"]


def test_tree_words_and_the_cache_strip():
    trace, r = round_two()
    assert "tree of shape 2,2,1,1 (14 nodes)" in draft_sentence(trace, r)
    assert "residual left after rejecting '␣is'" in tree_judge_sentence(r, r.nodes[3])
    assert "next sibling '␣==' is judged against it" in tree_judge_sentence(r, r.nodes[2])
    assert "No sibling is left" in tree_judge_sentence(r, r.nodes[11])
    assert "Every child tried under" in resolve_sentence(r)
    assert "the correction 'r'" in resolve_sentence(r)
    assert "crops every tree node" in commit_sentence(r)
    frame = cache_frame(r, True, (r.target_cache[1] - 4, r.draft_cache[1] - 4), ("a", "b", "c", "d"))
    after = frame[frame["row"] == "target · after the rollback"]
    assert (after["status"] == "new, kept").sum() == 4
    assert (after["status"] == "cropped away").sum() == 14


def test_a_tree_of_chosen_children_is_not_said_to_be_drawn_from_q():
    """A feature head's tree holds its top-b tokens (one-hot q): its draft phase says they were chosen; a draft
    model's sampled tree says they were drawn from q."""
    from dataclasses import replace

    _, r = round_two()
    draft = steps.Step(steps.DRAFT, None)
    assert trees.subtitle(r, draft) == trees.SUBTITLES[steps.DRAFT]  # drawn: q below 1 somewhere
    chosen = replace(r, nodes=tuple(replace(node, q=1.0) for node in r.nodes))
    assert trees.subtitle(chosen, draft) == trees.CHOSEN_SUBTITLE
    assert trees.subtitle(chosen, steps.Step(steps.VERIFY, None)) == trees.SUBTITLES[steps.VERIFY]
