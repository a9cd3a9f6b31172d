"""Tree shapes in RunSettings: what is accepted, and the message for each bad shape."""

import pytest

from specviz import methods
from specviz.core.settings import RunSettings
from specviz.errors import SettingsError


def test_a_tree_shape_round_trips_and_sets_the_depth():
    s = RunSettings(method="tree", tree=[3, 2, 1, 1])
    assert s.tree == (3, 2, 1, 1)
    assert s.draft_length == 4
    assert RunSettings.from_dict(s.to_dict()) == s
    assert "tree" not in RunSettings().to_dict()  # chain settings keep their JSON
    plain = RunSettings(method="plain", tree=(2, 1))  # the baseline of a tree measurement ignores the shape
    assert plain.draft_length == 0


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(method="tree"), "needs a tree shape"),  # empty
        (dict(method="tree", tree=()), "needs a tree shape"),
        (dict(method="tree", tree=(2, 0, 1)), "depth 2 has 0"),  # zero children
        (dict(method="tree", tree=(2, "x")), "depth 2 has 'x'"),
        (dict(method="tree", tree=(1,) * 17), "17 levels deep"),
        (dict(method="tree", tree=(8, 8, 8)), "584 nodes"),  # too many for one verify pass
        (dict(method="ngram", tree=(2, 1)), "n-gram lookup proposes one continuation"),
        (dict(method="draft", tree=(2, 1)), "only used by the tree method"),
    ],
)
def test_bad_shapes_get_clear_messages(kwargs, message):
    with pytest.raises(SettingsError, match=message):
        RunSettings(**kwargs)


def test_the_tree_method_is_registered_but_not_offered_where_no_shape_can_be_given():
    from specviz.engine.proposers import TreeProposer, proposer_class

    assert proposer_class("tree") is TreeProposer
    assert methods.get("tree").loads_draft
    assert "tree" not in methods.PROPOSERS
    assert "tree" not in methods.LANES
    assert methods.SHAPED == ("tree",)
