"""The race with the lanes the user picks: any three speculative lanes, head lanes, suffix decoding
and early exit among them, each beside plain decoding; a fourth is not accepted, and a tree lane as a fourth is left
out with a word."""

from app_helpers import click, open_page, text

from specviz.measure.race import MAX_PICKED, three_lanes
from specviz.methods import DRAFT, EAGLE, EAGLE3, EARLY_EXIT, MEDUSA, NGRAM, PLAIN, SUFFIX, lane_label


def three_picker(at):
    at.radio(key="race_picking").set_value("up to three of my choice, beside plain").run()
    return at.multiselect(key="race_three")


def test_three_chosen_lanes_race_beside_plain_with_the_same_greedy_text(tiny_default):
    at = open_page("pages/race.py")
    at.sidebar.number_input(key="exit_layer").set_value(2).run()  # early exit's E: the tiny target has 3 layers
    at.sidebar.slider(key="temperature").set_value(0.0).run()
    at.sidebar.slider(key="max_new_tokens").set_value(8).run()
    picker = three_picker(at)
    assert picker.max_selections == MAX_PICKED
    assert PLAIN not in picker.options  # plain is always raced, not picked
    assert picker.value == [DRAFT, SUFFIX, EAGLE3]  # one of each kind of drafter to start with
    picker.set_value([EAGLE3, SUFFIX, EARLY_EXIT]).run()
    assert any(
        text(c).startswith("3 of at most 3 chosen: specviz · EAGLE-3 head, specviz · suffix decoding, specviz · early")
        for c in at.caption
    )
    at = click(at, "Start the race")
    assert not at.exception
    assert not at.error
    records = at.session_state["race"][0].records
    assert [r.method for r in records] == [PLAIN, EAGLE3, SUFFIX, EARLY_EXIT]
    assert all(r.output_ids == records[0].output_ids for r in records)  # greedy, float32: the same text
    table = at.dataframe[0].value
    assert list(table["lane"]) == [lane_label(m) for m in (PLAIN, EAGLE3, SUFFIX, EARLY_EXIT)]


def test_a_tree_lane_as_a_fourth_is_left_out_and_two_chosen_leave_it_room(tiny_default):
    at = open_page("pages/race.py")
    at.sidebar.slider(key="temperature").set_value(0.0).run()
    at.sidebar.slider(key="max_new_tokens").set_value(6).run()
    three_picker(at).set_value([MEDUSA, EAGLE, NGRAM]).run()
    at.radio(key="race_tree").set_value(at.radio(key="race_tree").options[1]).run()
    assert any("The tree lane would be a fourth speculative lane" in w.value for w in at.warning)
    at.multiselect(key="race_three").set_value([MEDUSA, EAGLE]).run()
    assert not at.warning
    at = click(at, "Start the race")
    assert not at.exception and not at.error
    assert [r.method for r in at.session_state["race"][0].records] == [PLAIN, MEDUSA, EAGLE, "tree"]


def test_the_first_three_are_one_of_each_kind_of_drafter_offered():
    assert three_lanes([PLAIN, DRAFT, NGRAM, SUFFIX, EAGLE, EAGLE3, MEDUSA]) == [DRAFT, SUFFIX, EAGLE3]
    assert three_lanes([NGRAM, "hf_assisted", EAGLE]) == [EAGLE, NGRAM, "hf_assisted"]
    assert three_lanes([NGRAM]) == [NGRAM]
