"""The draft phase's sentence of why an adaptive round's draft stopped (viz/explain.py stop_sentence)."""

from specviz.core.settings import RunSettings
from specviz.engine.decode import generate
from specviz.viz.explain import draft_sentence, stop_sentence


def test_a_self_draft_grows_k_by_two_and_ends_at_the_token_budget(load):
    pair = load("llama-target", "llama-target")  # the target drafting for itself: every draft accepted
    trace = generate(pair, "def add", RunSettings(k=2, max_new_tokens=20, k_schedule="heuristic"))
    first, last = trace.rounds[0], trace.rounds[-1]
    assert (
        stop_sentence(trace, first)
        == "It stopped at cap K = 2: the schedule's K. Heuristic: K 2 → 4 after a full accept (+2)."
    )
    assert stop_sentence(trace, last).startswith(
        f"It stopped at the token budget: {20 - sum(len(r.committed) for r in trace.rounds[:-1])} new token(s) left"
    )
    assert draft_sentence(trace, first).endswith("Heuristic: K 2 → 4 after a full accept (+2). The drafts:")


def test_a_constant_round_says_nothing_new(load):
    pair = load("llama-target", "llama-target")
    trace = generate(pair, "def add", RunSettings(k=2, max_new_tokens=6))
    assert stop_sentence(trace, trace.rounds[0]) == ""
    assert draft_sentence(trace, trace.rounds[0]).endswith("ms in all):")
