"""The exactness lab counts its switches from the data and tells the design choice from the bugs, and its two-token
table reads every number with the same decimals as the metrics beside it ("three … the other two" was once said of
six switches, one of them Medusa's typical acceptance, a design choice; the table mixed 2 and 3)."""

import json
import re

import pytest
from app_helpers import open_page

from specviz.core import lab


@pytest.fixture
def page():
    at = open_page("pages/exactness.py", 120)
    assert not at.exception
    assert not at.error
    return at


def test_the_bug_switches_are_counted_from_the_variants_and_the_design_choice_is_set_apart(page):
    switches = [v for v in lab.VARIANTS if v.key != "exact"]
    assert [v.label for v in switches] == [r for r in page.radio(key="bug").options if r != lab.EXACT_VARIANT.label]
    words = next(c.value for c in page.caption if "switches below" in c.value)
    reported = [v for v in switches if v.seen_in != lab.CLASSIC and v.key != lab.TYPICAL]
    classic = [v for v in switches if v.seen_in == lab.CLASSIC]
    assert (len(switches), len(reported), len(classic)) == (6, 3, 2)
    assert words.startswith("Six switches below, each swapping one part of the exact sampler. Five are mistakes: three")
    assert all(v.label in words for v in switches)
    assert "two classic (correction drawn from q; accept when p ≥ q)" in words
    assert "And one, Medusa's typical acceptance, is not a bug but a design choice" in words
    assert "the other two" not in words


@pytest.mark.parametrize("p_a, q_a", [(0.7, 0.9), (0.75, 0.93)])  # q(B) = 0.07: that column took three decimals
def test_the_two_token_table_reads_every_number_with_the_metrics_three_decimals(page, p_a, q_a):
    page.slider(key="p_a").set_value(p_a).run()
    page.slider(key="q_a").set_value(q_a).run()
    (table,) = [d for d in page.dataframe if list(d.value.columns)[:1] == ["quantity"]]
    config = json.loads(table.proto.columns)
    formats = {name: config[name]["type_config"]["format"] for name in lab.two_token_flow(p_a, q_a).tokens}
    assert formats == {"A": "%.3f", "B": "%.3f"}
    metric = next(m.value for m in page.metric if m.label == "Final P(A)")
    assert re.fullmatch(r"\d\.\d{3}", metric)  # the metrics beside it: three decimals too
