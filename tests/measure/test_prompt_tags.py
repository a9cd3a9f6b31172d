"""Pasted and .txt prompts can be tagged with `### tag: NAME` lines; a tag line written wrong is
refused with its line number, and no format may use the tag that names the whole workload."""

import pytest

from specviz.measure.prompts import WorkloadError, parse_workload, tag_counts, tags_found

TAGGED = """first, before any tag line
### tag: code
def add(a, b):

def sub(a, b):
### tag: prose
The fox jumps.
### A Markdown heading is prompt text
more of the same prompt
"""


def test_a_tag_line_tags_every_prompt_after_it_until_the_next():
    rows = parse_workload(TAGGED, "pasted.txt").rows
    assert [(r.prompt, r.tag, r.line) for r in rows] == [
        ("first, before any tag line", "untagged", 1),  # before the first tag line: untagged
        ("def add(a, b):", "code", 3),
        ("def sub(a, b):", "code", 5),  # no --- anywhere: blank lines split, and the tag carries on
        ("The fox jumps.\n### A Markdown heading is prompt text\nmore of the same prompt", "prose", 7),
    ]
    assert tag_counts(rows) == {"untagged": 1, "code": 2, "prose": 1}


def test_tag_lines_work_with_dashed_blocks_and_any_case_and_spacing():
    rows = parse_workload("###TAG :  shell scripts \necho a\n---\necho b\n###  tag: sql\nselect 1\n", "w.txt").rows
    assert [(r.prompt, r.tag) for r in rows] == [
        ("echo a", "shell scripts"),
        ("echo b", "shell scripts"),
        ("select 1", "sql"),
    ]


@pytest.mark.parametrize(
    "text, line, words",
    [
        ("a\n### tag code\nb\n", 2, "is not a tag line: write '### tag: NAME'"),  # no colon
        ("a\n---\n### tag:   \nb\n", 3, "is not a tag line"),  # no name
        ("### Tag: ALL\nb\n", 1, 'the tag "all" is reserved for the whole workload'),
        ("x\n### tag: " + "n" * 41 + "\ny\n", 2, "at most 40 characters"),
    ],
)
def test_a_tag_line_written_wrong_is_refused_naming_its_line(text, line, words):
    with pytest.raises(WorkloadError) as caught:
        parse_workload(text, "pasted.txt")
    assert str(caught.value).startswith(f"line {line}: ")
    assert words in str(caught.value)


def test_the_whole_workloads_tag_is_refused_in_jsonl_and_csv_rows_too():
    """A tag "all" would be counted twice in the summary's "all" group and judged as the whole workload."""
    jsonl = parse_workload('{"prompt": "a", "tag": "all"}\n{"prompt": "b", "tag": "code"}\n', "w.jsonl")
    assert [r.prompt for r in jsonl.rows] == ["b"]
    assert jsonl.problems[0].startswith('line 1: the tag "all" is reserved')
    table = parse_workload("prompt,tag\na,code\nb,All\n", "w.csv")
    assert [r.prompt for r in table.rows] == ["a"]
    assert table.problems[0].startswith('line 3: the tag "all" is reserved')


def test_the_tags_found_are_said_in_one_line():
    assert tags_found(parse_workload(TAGGED, "p.txt").rows) == (
        "4 prompt(s) by tag: untagged (1), code (2), prose (1); each tag is judged on its own as well as all together."
    )
    assert tags_found(parse_workload("a\n---\nb\n", "p.txt").rows) == (
        "2 prompt(s), none tagged: the verdict judges them all together."
    )
    assert tags_found(parse_workload("### tag: code\na\n", "p.txt").rows) == "1 prompt(s) by tag: code (1)."
