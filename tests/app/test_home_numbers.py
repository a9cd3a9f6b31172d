"""The home page's speedup is the ratio of the two tokens/s shown beside it ("220 vs 126 tokens/s" was once shown
beside 1.68×), and its comparison with the recorded benches gives the real reason first.

The page's own measurement runs on the tiny pair (one repeat), then its speeds are set to that case's: plain's speed
moved between repeats, so each side's median, 220.0 / 126.0 = 1.75, is not the median paired ratio, 1.68."""

import re
from dataclasses import fields, replace

import pytest
import streamlit as st
from app_helpers import open_page

import specviz.ui.render
from specviz.measure.race import versus_plain
from specviz.measure.timing import Timing, paired_ratios

SPEC = (220.0, 220.1, 198.2)
PLAIN = (126.0, 131.0, 118.0)  # ratios 1.746, 1.680, 1.680: median 1.680 (the second repeat)


@pytest.fixture
def home(tiny_default, monkeypatch):
    def measured(pair, prompt, settings, repeats=3):
        once = versus_plain(pair, prompt, settings, repeats=1)
        timing = Timing(paired_ratios(SPEC, PLAIN), settings.sampling.temperature, settings.max_new_tokens)
        repeats = {"spec_repeats": SPEC, "plain_repeats": PLAIN}
        kept = {name: value for name, value in repeats.items() if name in {f.name for f in fields(once)}}
        return replace(once, spec_tokens_per_s=220.0, plain_tokens_per_s=126.0, timing=timing, **kept)

    monkeypatch.setattr(specviz.ui.render, "versus_plain", measured)
    st.cache_data.clear()  # another test's measurement of the same pair and settings must not be shown
    at = open_page("pages/home.py")
    assert not at.exception
    assert not at.error
    yield at
    st.cache_data.clear()


def test_the_speedup_shown_is_the_ratio_of_the_tokens_per_s_beside_it(home):
    shown = next(m.value for m in home.metric if m.label == "Measured speedup vs plain")
    assert shown == "1.68×"
    caption = next(c.value for c in home.caption if "tokens/s" in c.value)
    assert "220 vs 126" not in caption  # each side's median taken apart: 1.75, not the figure shown
    spec, plain = map(float, re.search(r"([\d.]+) vs ([\d.]+) tokens/s", caption).groups())
    assert (spec, plain) == (220.1, 131.0)  # the median repeat
    assert f"{spec / plain:.2f}×" == shown


def test_the_bench_comparison_says_no_recorded_bench_is_sampled_first(home):
    caption = next(c.value for c in home.caption if "recorded bench" in c.value)
    words = caption[caption.index("Not comparable with a recorded bench:") :]
    assert words.startswith(
        "Not comparable with a recorded bench: no recorded bench is sampled (this figure is sampled, T = 0.6"
    )
    assert "more files differ" not in words
