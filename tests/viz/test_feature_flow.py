"""The draft phase of a feature head: which feature each draft read (the target's, then the head's own), with which
token's embedding, in the order the head made them."""

from specviz import methods
from specviz.core.settings import RunSettings
from specviz.core.trace import ExtraToken, Position, Round, Totals, Trace
from specviz.viz import explain, feature_flow


def head_round(index, drafts, extra_text):
    positions = tuple(
        Position(i, 10 + i, text, 0.25 * (i + 1), 0.4, 1.0, 0.1, True, "accepted") for i, text in enumerate(drafts)
    )
    extra = ExtraToken(99, extra_text, "bonus", 1.0, 1.0, 0.5)
    return Round(index, positions, extra, (), (1,), 1.0, 1.0, (0, 0), (0, 0))


def eagle_trace():
    rounds = (head_round(0, ["def", " f"], "("), head_round(1, ["x", ")"], ":"))
    return Trace(RunSettings(k=2, method=methods.EAGLE), "p", (1, 2), rounds, "", Totals.of(rounds, 1.0))


def test_the_first_draft_reads_the_target_then_each_later_one_the_heads_own_prediction():
    flow = feature_flow.FLOWS[methods.EAGLE]
    later = feature_flow.feature_steps(flow, eagle_trace(), 1)
    # committed before round 2: 'def', ' f', '(' : the first draft reads the target's row at ' f' (whose p drew '(')
    # with the embedding of '(', the second the head's own ĝ1 with the embedding of the first draft 'x'
    assert [(s.index, s.from_target, s.token_in, s.draft) for s in later] == [
        (1, True, "‘(’", "x"),
        (2, False, "‘x’", ")"),
    ]
    assert later[0].feature == "target's f(‘␣f’)"
    assert later[1].feature == "head's ĝ1"
    assert [s.q for s in later] == [0.25, 0.5]


def test_the_first_round_names_the_prompts_tokens():
    first = feature_flow.feature_steps(feature_flow.FLOWS[methods.EAGLE], eagle_trace(), 0)
    assert first[0].token_in == "the last prompt token"
    assert first[0].feature == "target's f(the 2nd-last prompt token)"
    assert first[1].token_in == "‘def’"


def test_the_html_marks_whose_feature_each_line_read_and_is_inert():
    flow = feature_flow.FLOWS[methods.EAGLE]
    html = feature_flow.flow_html(flow, feature_flow.feature_steps(flow, eagle_trace(), 1))
    assert html.count('class="flow-step"') == 2
    assert 'title="target"' in html and 'title="head"' in html
    assert "dashed" in html and "q = 0.500" in html
    assert '<b class="flow-token">&#41;</b>' in html  # a draft of ')' is shown as text, not markup


def test_a_head_whose_every_draft_reads_the_target_has_no_dashed_line():
    independent = feature_flow.HeadFlow("head i", "target's f", "", "head i's LM head", "f: ...", "", False)
    steps = feature_flow.feature_steps(independent, eagle_trace(), 1)
    assert all(s.from_target and s.token_in is None for s in steps)
    assert "dashed" not in feature_flow.flow_html(independent, steps)


def medusa_trace(k=2, max_new=64):
    rounds = (head_round(0, ["def", " f"], "("), head_round(1, ["x", ")"], ":"))
    settings = RunSettings(k=k, max_new_tokens=max_new, method=methods.MEDUSA)
    return Trace(settings, "p", (1, 2), rounds, "", Totals.of(rounds, 1.0))


def test_every_medusa_head_reads_the_same_target_feature_and_no_token():
    flow = feature_flow.FLOWS[methods.MEDUSA]
    steps = feature_flow.feature_steps(flow, medusa_trace(), 1)
    # committed before round 2: 'def', ' f', '(' : both heads read the target's row at ' f' (whose p drew '('), and
    # no embedding: head 1 does not see head 0's draft 'x'
    assert [(s.index, s.feature, s.from_target, s.token_in, s.draft) for s in steps] == [
        (1, "target's f(‘␣f’)", True, None, "x"),
        (2, "target's f(‘␣f’)", True, None, ")"),
    ]
    html = feature_flow.flow_html(flow, steps)
    assert "→ head 0 → ĝ1" in html and "→ head 1 → ĝ2" in html  # one head per line, numbered as vLLM's
    assert "dashed" not in html and "emb(" not in html


def test_the_medusa_draft_sentence_says_the_heads_are_independent():
    trace = medusa_trace()
    said = explain.draft_sentence(trace, trace.rounds[1])
    assert said.startswith("The Medusa heads propose 2 token(s), all at once from one feature")
    assert "without seeing the other heads' guesses" in said
    assert "one head per draft" not in said  # K = 2 drafted 2


def test_a_medusa_round_short_of_k_says_there_is_one_head_per_draft():
    trace = medusa_trace(k=4)  # two drafts a round with K = 4 and tokens to spare: the heads are two
    assert "(K = 4, but there is one head per draft)" in explain.draft_sentence(trace, trace.rounds[1])
    eagle = eagle_trace()
    assert "one head per draft" not in explain.draft_sentence(eagle, eagle.rounds[1])


def test_every_head_method_has_its_feature_flow_and_no_other_method_does():
    """The flows are read from assets/lessons/feature_flows.json by method name: a head added to the registry needs
    its entry there, and a name there that is no head method is a typo."""
    assert set(feature_flow.FLOWS) == {name for name, m in methods.REGISTRY.items() if m.loads_head}
