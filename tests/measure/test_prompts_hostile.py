"""Hostile workload files (a huge or bare-CR CSV field, an unterminated quote, deep .jsonl nesting, a lone surrogate,
an endless device): a bad row is reported by line and the good ones kept; a
file that cannot be read at all is one clear WorkloadError; nothing reads past the size cap."""

import json
import time

import pytest

from specviz.measure.prompts import MAX_FILE_BYTES, WorkloadError, parse_workload, read_workload


def test_a_csv_field_longer_than_the_csv_modules_default_limit_is_read():
    long = "x" * 140_000  # csv's default field_size_limit is 131072
    workload = parse_workload(f"prompt,tag\n{long},big\nshort,small\n", "w.csv")
    assert [(len(r.prompt), r.tag) for r in workload.rows] == [(140_000, "big"), (5, "small")]


def test_a_bare_carriage_return_in_a_csv_field_is_one_problem_and_the_other_rows_run():
    workload = parse_workload("prompt,tag\na,b\nc\rd,e\nf,g\n", "w.csv")
    assert [(r.prompt, r.line) for r in workload.rows] == [("a", 2), ("f", 4)]
    assert workload.problems == (
        "line 3: a line break (a lone carriage return) inside an unquoted field: put the field in quotes",
    )


def test_an_unterminated_quote_is_reported_not_merged_into_one_prompt():
    workload = parse_workload('prompt,tag\na,b\n"never closed,x\nc,d\ne,f\n', "w.csv")
    assert [r.prompt for r in workload.rows] == ["a"]
    assert len(workload.problems) == 1
    assert workload.problems[0].startswith("line 3: a quote")
    assert "never closes" in workload.problems[0]


def test_a_csv_whose_only_row_has_an_unterminated_quote_says_why_nothing_is_usable():
    with pytest.raises(WorkloadError, match="no usable prompts.*never closes"):
        parse_workload('prompt\n"only one\nand more\n', "w.csv")


def test_a_stray_quote_in_an_unquoted_csv_field_is_a_problem_not_a_silent_edit():
    workload = parse_workload('prompt\n"a"b\nc\n', "w.csv")
    assert [r.prompt for r in workload.rows] == ["c"]
    assert workload.problems[0].startswith("line 2: not valid CSV")


def test_a_deeply_nested_jsonl_line_is_one_problem_and_the_other_lines_run():
    data = '{"prompt": "first"}\n' + "[" * 50_000 + '\n{"prompt": "third"}\n'
    workload = parse_workload(data, "w.jsonl")
    assert [(r.prompt, r.line) for r in workload.rows] == [("first", 1), ("third", 3)]
    assert workload.problems == ("line 2: nested too deeply to be a prompt record",)


@pytest.mark.parametrize("field", ["prompt", "tag"])
def test_a_lone_surrogate_is_refused_at_parse_time_with_its_line(field):
    record = {"prompt": "ok", field: "a\ud800b"} if field == "tag" else {"prompt": "a\ud800b"}
    data = '{"prompt": "fine"}\n' + json.dumps(record) + "\n"  # json.dumps writes "\ud800": valid JSON
    workload = parse_workload(data, "w.jsonl")
    assert [r.prompt for r in workload.rows] == ["fine"]
    assert workload.problems == (
        f"line 2: the {field} holds '\\ud800' at character 1, which is not text (a lone surrogate): remove it",
    )


def test_pasted_text_with_a_lone_surrogate_is_refused_clearly():
    with pytest.raises(WorkloadError, match="lone surrogate|not text"):
        parse_workload("a\ud800b", "pasted.txt")


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_an_endless_device_is_refused_after_reading_at_most_the_cap(device):
    start = time.perf_counter()
    with pytest.raises(WorkloadError, match="larger than 2,000 kB"):
        read_workload(device)
    assert time.perf_counter() - start < 5


def test_read_capped_reads_no_more_than_the_cap_plus_one(tmp_path):
    from specviz.measure.prompts import read_capped

    path = tmp_path / "w.txt"
    path.write_bytes(b"a" * 100)
    assert read_capped(path, 100, "test") == b"a" * 100
    with pytest.raises(WorkloadError, match="larger than 0 kB"):
        read_capped(path, 99, "test")


@pytest.mark.slow
def test_a_file_at_the_cap_is_read_and_one_byte_more_is_refused(tmp_path):
    path = tmp_path / "w.txt"
    path.write_bytes(b"p\n\n" * (MAX_FILE_BYTES // 3))
    with pytest.raises(WorkloadError, match="at most 500"):  # read in full: it is refused for its prompt count
        read_workload(path)
    path.write_bytes(b"p" * (MAX_FILE_BYTES + 1))
    with pytest.raises(WorkloadError, match="larger than"):
        read_workload(path)


@pytest.mark.parametrize("where", ["missing", "dir"])
def test_missing_files_and_directories_are_clear_messages(tmp_path, where):
    path = tmp_path / "nope.jsonl" if where == "missing" else tmp_path
    with pytest.raises(WorkloadError, match="Cannot read"):
        read_workload(path)
