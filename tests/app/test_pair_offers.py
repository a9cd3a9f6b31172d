"""A pair is offered only what it has, and its own defaults when it loads: the sidebar's
proposers follow the heads beside its target as the race's lanes do, its draft vocabulary follows its draft model
unless the user set one, and the sidebar's words describe the pair in use and what happened to the prompt."""

import pytest
from app_helpers import click, open_page

from specviz import methods
from specviz.measure.race_lanes import runnable_lanes
from specviz.ui.controls import CUSTOM

HEADS = [m for m in methods.PROPOSERS if methods.get(m).loads_head]  # EAGLE-1, EAGLE-3, Medusa, MTP


def only_eagle3(monkeypatch):
    """A target like smollm2's: an EAGLE-3 head beside it, no EAGLE-1 head, Medusa heads or MTP module."""
    monkeypatch.setattr("specviz.engine.loading.models.find_heads", lambda target, head: {methods.EAGLE3: "beside"})


def test_the_round_page_offers_a_pair_only_the_heads_beside_its_target_as_the_race_does(tiny_default, monkeypatch):
    only_eagle3(monkeypatch)
    at = open_page("pages/rounds.py")
    assert not at.exception
    offered = at.sidebar.radio(key="method").options
    assert methods.label(methods.EAGLE3) in offered
    assert not {methods.label(m) for m in HEADS if m != methods.EAGLE3} & set(offered)  # no "--head DIR" failures
    assert (
        "No EAGLE-1 head, Medusa heads or MTP module sit beside this target, so the proposers that draft with them are "
        "not offered"
    ) in at.sidebar.radio(key="method").help
    raced = {m for m in runnable_lanes({methods.EAGLE3: "beside"}, False) if methods.get(m).loads_head}
    assert raced == {m for m in HEADS if methods.label(m) in offered}  # one rule for both pages


def test_a_link_asking_for_a_head_the_pair_lacks_says_so_and_drafts_with_what_it_has(tiny_default, monkeypatch):
    only_eagle3(monkeypatch)
    from app_helpers import page
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(page("app.py"), default_timeout=60)
    at.query_params.update({"method": methods.MEDUSA, "t": "0", "n": "8"})
    at = at.switch_page(page("pages/rounds.py")).run()
    assert not at.exception and not at.error
    assert at.sidebar.radio(key="method").value == methods.DRAFT
    assert any(
        f"no {methods.label(methods.MEDUSA)} beside its target" in c.value and methods.label(methods.DRAFT) in c.value
        for c in at.sidebar.caption
    )
    assert at.session_state["rounds_trace"].settings.method == methods.DRAFT


def test_the_workload_page_offers_the_same_methods_as_the_sidebar(tiny_default, monkeypatch):
    only_eagle3(monkeypatch)
    at = open_page("pages/workload.py")
    assert not at.exception
    chips = next(m for m in at.multiselect if m.label == "Methods").options
    assert set(chips) == set(at.sidebar.radio(key="method").options)
    assert methods.label(methods.MEDUSA) not in chips


def switch_to(at, target: str, draft: str):
    """Choose a custom pair in the sidebar and load it."""
    at.sidebar.selectbox(key="pair_choice").set_value(CUSTOM).run()
    at.sidebar.text_input(key="custom_target").set_value(target).run()
    at.sidebar.text_input(key="custom_draft").set_value(draft).run()
    return click(at, "Load this pair")


@pytest.fixture
def two_drafts(tiny_default, model_dirs, monkeypatch):
    """The tiny pair's draft recommends 1024 tokens, as the toy's does; another draft recommends 16384, as smollm2's:
    (target, first draft, second draft)."""
    target, first = tiny_default
    second = str(model_dirs["llama-random"])
    recommends = {first: 1024, second: 16384}
    monkeypatch.setattr("specviz.ui.controls.recommended_draft_vocab", lambda draft: recommends.get(draft, 0))
    return target, first, second


def test_a_pair_that_loads_brings_its_own_draft_vocabulary(two_drafts):
    target, first, second = two_drafts
    at = open_page("pages/race.py")
    assert at.sidebar.number_input(key="draft_vocab").value == 1024
    at = switch_to(at, target, second)
    assert not at.exception and not at.sidebar.error
    assert at.session_state["active_pair"][1] == second
    assert at.sidebar.number_input(key="draft_vocab").value == 16384  # not the first draft's 1024
    at = switch_to(at, target, first)
    assert at.sidebar.number_input(key="draft_vocab").value == 1024


def test_a_draft_vocabulary_the_user_set_stays_when_the_pair_changes(two_drafts):
    target, _, second = two_drafts
    at = open_page("pages/race.py")
    at.sidebar.number_input(key="draft_vocab").set_value(2048).run()
    at = switch_to(at, target, second)
    assert at.sidebar.number_input(key="draft_vocab").value == 2048


def test_a_setting_follows_the_pair_unless_the_user_chose_another_value():
    from specviz.ui.controls import follow_pair

    default_of = {"toy": 1024, "smollm2": 16384}.get
    state: dict = {}
    follow_pair(state, "draft_vocab", "toy", default_of)
    assert state["draft_vocab"] == 1024  # nobody set it: the pair's own
    state["_touched_draft_vocab"] = True  # a link's dv=1024: the toy's own value, not a choice against it
    follow_pair(state, "draft_vocab", "smollm2", default_of)
    assert state["draft_vocab"] == 16384
    state["draft_vocab"] = 4096  # the user's own
    follow_pair(state, "draft_vocab", "toy", default_of)
    assert state["draft_vocab"] == 4096
    follow_pair(state, "draft_vocab", "toy", default_of)  # the same pair again changes nothing
    assert state["draft_vocab"] == 4096


def test_the_first_run_is_described_for_the_pair_in_use():
    from specviz.engine.loading.catalogue import SMOLLM2, find_pair
    from specviz.engine.loading.models import BUNDLED_DRAFT, BUNDLED_TARGET
    from specviz.ui.controls import FIRST_RUN_NOTE, first_run_note, page_default_note

    assert first_run_note(BUNDLED_TARGET, BUNDLED_DRAFT) == FIRST_RUN_NOTE  # the toy: what the settings were chosen for
    assert "reads like code" in FIRST_RUN_NOTE
    on_smollm2 = page_default_note("rounds", SMOLLM2.target_source, SMOLLM2.draft_source)
    assert "reads like code" not in on_smollm2 and "Python function" in on_smollm2  # what it shows there
    assert "temperature 0.6" in on_smollm2 and "seed 3" in on_smollm2
    across = page_default_note("rounds", SMOLLM2.target_source, find_pair("smollm2-pystdlib").draft_source)
    assert "TLI" in across and across != on_smollm2  # the same target drafted by the toy: its own words
    assert "was not looked at" in first_run_note("/some/other/target", "")  # a pair nobody looked at says so
    assert "was not looked at" in first_run_note(SMOLLM2.target_source, "/another/draft")


def test_the_load_button_is_gone_once_its_pair_loaded(tiny_default):
    at = open_page("pages/race.py")
    assert "Load this pair" not in [b.label for b in at.sidebar.button]  # the pair shown is the one in use
    at.sidebar.selectbox(key="dtype").set_value("bfloat16").run()
    assert "Load this pair" in [b.label for b in at.sidebar.button]
    at = click(at, "Load this pair")
    assert not at.exception and at.session_state["active_pair"][3] == "bfloat16"
    assert "Load this pair" not in [b.label for b in at.sidebar.button]  # in the run that loaded it, too
