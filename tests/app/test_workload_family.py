"""The workload page's one-click "the whole family": every method the pair can run is measured
and ranked per tag, best first, with α, τ, c and drafts per round; what cannot run is left out with the reason."""

from app_helpers import click, open_page, text

from specviz import methods

PROMPTS = "### tag: code\ndef add(a, b):\n---\nclass Counter:\n### tag: prose\nThe quick brown fox\n---\nOnce upon"


def test_the_whole_family_is_measured_and_ranked_per_tag(tiny_default):
    at = open_page("pages/workload.py", 240)
    at.radio[0].set_value("pasted text").run()
    at.text_area[0].set_value(PROMPTS).run()
    at.sidebar.slider(key="max_new_tokens").set_value(4).run()
    at.checkbox(key="whole_family").check().run()
    assert not at.exception
    captions = [text(c) for c in at.caption]
    family = [m for m in methods.PROPOSERS if m != methods.EARLY_EXIT]  # the tiny target has 3 layers; E is 4
    assert f"Measures {', '.join(methods.label(m) for m in family)}." in captions
    assert any(c.startswith("Left out early_exit: Early exit at E = 4 needs a target of more than 4") for c in captions)
    at.number_input[1].set_value(1).run()  # one timing repeat
    at = click(at, "▶ Measure")
    assert not at.exception
    assert not at.error
    records = at.session_state["workload_records"]
    assert {r.method for r in records} == set(family)
    assert len(records) == 4 * len(family)
    assert any(s.value == "The family ranked" for s in at.subheader)
    ranked = next(d.value for d in at.dataframe if "setting" in d.value.columns)
    n = len(family)
    assert list(ranked["tag"]) == ["all"] * n + ["code"] * n + ["prose"] * n
    for tag in ("all", "code", "prose"):
        rows = ranked[ranked["tag"] == tag]
        assert list(rows["rank"]) == ["★ 1", *map(str, range(2, n + 1))]
        assert list(rows["speedup"]) == sorted(rows["speedup"], reverse=True)  # best first
        assert rows["c"].notna().all() and rows["drafts per round"].notna().all()
        assert {"alpha", "tau", "speedup 95% CI"} <= set(rows.columns)
    best = [text(m) for m in at.markdown if text(m).startswith("- Best for ")]
    assert [line.split(":")[0] for line in best] == [
        "- Best for all prompts",
        "- Best for prompts tagged 'code'",
        "- Best for prompts tagged 'prose'",
    ]
    top = ranked[ranked["tag"] == "code"].iloc[0]
    assert f"{top['setting']} at {top['speedup']:.2f}x" in best[1]
