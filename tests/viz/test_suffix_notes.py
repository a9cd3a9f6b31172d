"""What the round page says about a suffix decoding round: how many tokens the tries supported, or why none; and a
run whose suffix options differ from the sidebar's names them."""

from specviz.core.settings import RunSettings
from specviz.core.suffix_tree import SuffixOptions
from specviz.engine.decode import generate
from specviz.viz import run_notes
from specviz.viz.explain import draft_sentence

SUFFIX = RunSettings(method="suffix", k=6, max_new_tokens=30)


def test_a_suffix_round_says_what_it_walked_or_why_it_proposed_nothing(load):
    trace = generate(load("llama-target"), "for x in xs:\n    print(x)\nfor x in xs:\n   ", SUFFIX)
    empty = next(r for r in trace.rounds if not r.proposed)
    full = next(r for r in trace.rounds if r.proposed)
    assert "Suffix decoding found no continuation" in draft_sentence(trace, empty)
    assert "below 0.1" in draft_sentence(trace, empty)
    said = draft_sentence(trace, full)
    assert f"{full.proposed} token(s), no model run" in said and "most frequent continuation" in said
    assert "n-gram" not in said


def test_changed_suffix_options_are_named():
    other = RunSettings(method="suffix", k=6, max_new_tokens=30, suffix=SuffixOptions(min_token_prob=0.3))
    assert run_notes.settings_differences(SUFFIX, other) == [
        "suffix options depth 24, factor 1, min prob 0.1 (the sidebar: depth 24, factor 1, min prob 0.3)"
    ]
