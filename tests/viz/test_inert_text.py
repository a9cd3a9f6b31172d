"""User text renders as text: a prompt, a trace's token texts or a server's words can neither open HTML nor, after a
blank line ends Streamlit's HTML block, be read as Markdown (an image from another host, a heading, a link)."""

from __future__ import annotations

import html
import re

import pytest

from specviz.core.settings import RunSettings
from specviz.core.trace import Totals, Trace
from specviz.viz.text import literal, trace_html
from specviz.viz.workload_charts import heatmap_html

ATTACK = (
    "def f():\n\n![px](http://127.0.0.1:18778/pixel-url.png)\n\n# Session expired\n\n"
    "[Log in again](http://127.0.0.1:18778/phish) <img src=x onerror=alert(1)> [js](javascript:alert(1)) `code` *em*"
)


@pytest.mark.parametrize("text", [ATTACK, "a\r\n\r\nb", "plain words", "", "&amp; already escaped"])
def test_literal_text_decodes_back_to_itself_and_holds_no_markup(text):
    shown = literal(text)
    assert html.unescape(shown) == text  # a browser (and Markdown's entity decoding) shows exactly these characters
    bare = re.sub(r"&#\d+;", "", shown)  # what is left besides the character references
    for active in "<>[]()!#*`&\n\r":
        assert active not in bare


def test_a_trace_with_an_attack_in_its_prompt_renders_as_one_inert_block():
    trace = Trace(RunSettings(), ATTACK, (1,), (), "", Totals.of((), 1.0))
    markup = trace_html(trace)
    assert "\n" not in markup  # no blank line can end the HTML block
    for opening in ("![", "](", "<img", "# Session", "javascript:"):
        assert opening not in markup
    assert html.unescape(markup).count(ATTACK) == 1


def test_the_workload_heatmap_shows_prompts_as_text():
    class Record:
        prompt = ATTACK
        tokens = [("\n\n# heading", None, "correction"), ("![x](http://h/i.png)", 0.5, "accepted")]

    markup = heatmap_html(Record())
    for opening in ("\n\n", "![", "<img", "](http"):
        assert opening not in markup
