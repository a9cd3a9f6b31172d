"""The workload page's go / no-go: pasted prompts take `### tag: NAME` lines and the tags found
are shown before measuring; each tag is judged as well as all prompts, with the figures of the summary; a NO-GO says
which part of the rule failed and offers no settings to copy, while a tag that passes offers its own."""

from __future__ import annotations

import re
from dataclasses import replace

from app_helpers import click, open_page, text

from specviz.core.record import RunRecord
from specviz.core.settings import RunSettings
from specviz.measure.recommend import RULE
from specviz.measure.summary import summarize
from specviz.measure.workload import PairedRun

TAGGED = (
    "### tag: code\n"
    + "\n---\n".join(["def add(a, b):", "class Counter:", "import os", "for i in range(3):", "x = [1, 2"])
    + "\n### tag: prose\n"
    + "\n---\n".join(["The quick brown fox", "Once upon a time", "This module reads", "A list is", "The results show"])
)


def figures(sentence: str) -> tuple[str, str, str]:
    """The mean and the interval a verdict states, as written."""
    found = re.search(r"measured (\d+\.\d\d)x \(95% CI (\d+\.\d\d)x–(\d+\.\d\d)x", sentence)
    assert found, sentence
    return found.groups()


def test_tags_are_shown_before_measuring_and_each_is_judged_with_the_tables_figures(tiny_default):
    at = open_page("pages/workload.py")
    at.radio[0].set_value("pasted text").run()
    at.text_area[0].set_value("def f():\n### tag code\nx\n").run()  # no colon: refused, naming the line
    assert [text(e) for e in at.error] == [
        "line 2: '### tag code' is not a tag line: write '### tag: NAME' (a colon, then the tag)."
    ]
    at.text_area[0].set_value(TAGGED).run()
    assert not at.error
    assert any(
        text(c) == "10 prompt(s) by tag: code (5), prose (5); each tag is judged on its own as well as all together."
        for c in at.caption
    )
    at.sidebar.slider(key="max_new_tokens").set_value(3).run()
    at.sidebar.number_input(key="seed").set_value(5).run()  # the verdicts' intervals use the run's seed, as the table
    at = click(at, "▶ Measure")
    assert not at.exception
    assert not at.error
    records = at.session_state["workload_records"]
    assert [r.tag for r in records] == ["code"] * 5 + ["prose"] * 5
    base, _, _, _, costs = at.session_state["workload_settings"]
    assert base.seed == 5
    rows = {row["tag"]: row for row in summarize(records, costs, base.seed)}  # one method, one K: a row per tag
    verdicts = [text(e) for e in [*at.success, *at.warning, *at.info] if RULE in text(e)]
    overall = [v for v in verdicts if v.startswith(("GO: ", "NO-GO: "))]
    tagged = {tag: [v for v in verdicts if f"for prompts tagged **{tag}**:" in v] for tag in ("code", "prose")}
    assert len(overall) == 1 and all(len(found) == 1 for found in tagged.values()), verdicts
    for tag, sentence in [("all", overall[0]), ("code", tagged["code"][0]), ("prose", tagged["prose"][0])]:
        row = rows[tag]
        assert figures(sentence) == (f"{row['speedup']:.2f}", *(f"{v:.2f}" for v in row["speedup_ci"])), tag
        passes = row["speedup"] >= 1.1 and row["speedup_ci"][0] > 1.0
        assert sentence.startswith("GO" if passes else "NO-GO"), sentence


PLAIN_7 = (1,) * 7


def run(method: str, committed: tuple[int, ...], wall: float, prompt: str, tag: str) -> RunRecord:
    k = 0 if method == "plain" else 4
    drafted = tuple(k for _ in committed)
    accepted = tuple(max(0, c - 1) for c in committed)
    judged = tuple(min(a + 1, d) for a, d in zip(accepted, drafted))
    ends = tuple(wall * (i + 1) / len(committed) for i in range(len(committed)))
    body = replace(RunSettings(), method=method, k=max(k, 1), stop_at_eos=False).to_dict()
    ids = tuple(range(sum(committed)))
    return RunRecord(
        "specviz", method, k, prompt, "", ids, committed, drafted, accepted, judged, ends, wall, settings=body, tag=tag
    )


def paired(speedups: tuple[float, ...], tag: str, prompt: str) -> PairedRun:
    """Repeats that measured these speedups over plain runs of 7 tokens in 0.03 s."""
    plains = tuple(run("plain", PLAIN_7, 0.03, prompt, tag) for _ in speedups)
    return PairedRun(tuple(run("draft", (5, 2), 0.03 / s, prompt, tag) for s in speedups), plains)


def test_a_no_go_names_the_failed_part_and_only_the_tag_that_passes_offers_settings(tiny_default):
    at = open_page("pages/workload.py")
    records = [paired((1.5, 1.6), "code", f"c{i}") for i in range(5)]
    records += [paired((0.8, 0.9), "prose", f"p{i}") for i in range(5)]
    meta = {"target": "t", "draft": "d-model", "device": "cpu", "dtype": "float32"}
    at.session_state["workload_records"] = records
    at.session_state["workload_settings"] = (RunSettings(), meta, ["draft"], [4], None)  # as run_here stores
    at.run()
    assert not at.exception
    warnings = [text(w) for w in at.warning]
    overall = [w for w in warnings if w.startswith("NO-GO: ")]
    prose = [w for w in warnings if w.startswith("NO-GO for prompts tagged **prose**: ")]
    code = [text(s) for s in at.success if text(s).startswith("GO for prompts tagged **code**: ")]
    assert len(overall) == len(prose) == len(code) == 1, (warnings, [text(s) for s in at.success])
    assert f"{RULE}: its interval reaches 1.00x or below. Decode plainly" in overall[0]  # the mean (1.20x) passes
    assert f"{RULE}: it is under 1.10x, and its interval reaches 1.00x or below." in prose[0]
    assert any(
        text(c).startswith("No deployment settings are offered for a NO-GO")
        and "except for the tags that pass" in text(c)
        for c in at.caption
    )
    assert any(text(m) == "For prompts tagged **code** (draft model, K = 4):" for m in at.markdown)
    configs = [c.value for c in at.code if c.language == "json"]
    assert len(configs) == 1 and '"d-model"' in configs[0]  # code's settings only; prose and all offer none
