"""The workload page runs a three-prompt workload and its tables agree with the records it measured; an uploaded
file's bad rows are listed by line number and its good rows still run."""

import html

from app_helpers import click, open_page

PROMPTS = "def add(a, b):\n---\nclass Counter:\n---\nThe quick brown fox"


def test_three_prompt_workload_fills_the_tables(tiny_default):
    at = open_page("pages/workload.py")
    at.radio[0].set_value("pasted text").run()
    at.text_area[0].set_value(PROMPTS).run()
    at.sidebar.slider(key="max_new_tokens").set_value(12).run()
    at = click(at, "▶ Measure")
    assert not at.exception
    assert not at.error
    records = at.session_state["workload_records"]
    assert [r.prompt for r in records] == ["def add(a, b):", "class Counter:", "The quick brown fox"]
    per_prompt = at.dataframe[1].value
    assert list(per_prompt["prompt"]) == [r.prompt for r in records]
    assert list(per_prompt["alpha"].round(6)) == [round(r.alpha, 6) for r in records]
    summary = at.dataframe[0].value
    overall = summary[summary["tag"] == "all"].iloc[0]
    assert overall["alpha"] == sum(r.accepted for r in records) / sum(r.judged for r in records)
    assert overall["acceptance_rate"] == sum(r.accepted for r in records) / sum(r.proposed for r in records)
    # three prompts are too few for a go / no-go: the page says so instead of a verdict
    assert not at.success
    assert any(i.value.startswith("No verdict yet") and "at least 5 prompts" in i.value for i in at.info)
    # the speedup says how it was timed: the page's default 2 repeats, sampled at the page's temperature 1
    timed = "The speedup of draft model, K = 4: Timed on 3 prompts"
    words = next(c.value for c in at.caption if c.value.startswith(timed))
    assert "sampled at temperature 1" in words and "each timed 2 times in alternating order" in words
    assert "widened to hold every repeat's own figure and the mean of each of the 2 repeats alone" in words
    assert "Not comparable with a recorded bench" in " ".join(c.value for c in at.caption)  # a tiny test pair
    assert all(len(r.speedups) == 2 for r in records)
    assert {"speedup_low", "speedup_high"} <= set(per_prompt.columns)
    assert any("The black bars on the measured speedups are the 95% interval" in c.value for c in at.caption)
    # results survive a rerun (another widget changed)
    at.sidebar.slider(key="k").set_value(2).run()
    assert len(at.session_state["workload_records"]) == 3


# An uploaded .jsonl: lines 1, 3 and 7 are prompts; 2, 4 and 5 are not; 6 is blank (skipped silently).
MIXED_JSONL = b"""{"prompt": "def add(a, b):", "tag": "code"}
{"prompt": "unterminated"
{"prompt": "The quick brown fox", "tag": "prose"}
{"tag": "code"}
["not", "an", "object"]

{"prompt": "class Counter:"}
"""


def test_bad_upload_rows_are_listed_and_valid_rows_kept(tiny_default):
    at = open_page("pages/workload.py")
    at.radio[0].set_value("an uploaded file").run()
    at.file_uploader[0].set_value(("mixed.jsonl", MIXED_JSONL, "application/jsonl")).run()
    assert not at.exception
    assert not at.error
    skipped = [w.value for w in at.warning if w.value.startswith("Skipped rows")]
    assert len(skipped) == 1
    listed = [html.unescape(line) for line in skipped[0].splitlines() if line.startswith("- ")]  # shown as text
    assert [line.split(":")[0] for line in listed] == ["- line 2", "- line 4", "- line 5"]
    assert "not valid JSON" in listed[0]
    assert '"prompt"' in listed[1]
    assert "object" in listed[2]
    at.sidebar.slider(key="max_new_tokens").set_value(2).run()
    at = click(at, "▶ Measure")  # one method (draft) at one K: one run per kept row
    assert not at.exception
    assert not at.error
    records = at.session_state["workload_records"]
    assert [(r.prompt, r.tag) for r in records] == [
        ("def add(a, b):", "code"),
        ("The quick brown fox", "prose"),
        ("class Counter:", "untagged"),
    ]
    assert list(at.dataframe[1].value["prompt"]) == [r.prompt for r in records]
    assert any(c.value.startswith("3 of 3 results (prompt × method × K) measured") for c in at.caption)
