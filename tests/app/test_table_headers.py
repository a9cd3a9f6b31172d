"""Every table on the calculator, exactness and race pages reads as words: each column has a human header (no
snake_case), numbers a format, and the columns that matter come first."""

import json
import logging

import pytest
from app_helpers import open_page


def tables(at) -> list[tuple[dict, list[str]]]:
    """Each table's column config (name -> label, width, format) and column order, as the browser gets them (the
    exactness lab's two editable tables, the model's rows, are not among them)."""
    shown = [(json.loads(d.proto.columns or "{}"), list(d.proto.column_order)) for d in at.dataframe]
    return [(config, order) for config, order in shown if order]


@pytest.mark.parametrize("path, count", [("pages/calculator.py", 5), ("pages/exactness.py", 2), ("pages/race.py", 1)])
def test_every_table_has_human_headers_and_number_formats(path, count):
    at = open_page(path, 120)
    found = tables(at)
    assert len(found) == count
    for config, order in found:
        frame_columns = set(order)
        assert frame_columns <= set(config), "a column without a header"
        labels = [config[c]["label"] for c in order]
        assert not [label for label in labels if "_" in label], labels
        numeric = [c for c in order if config[c].get("type_config", {}).get("type") == "number"]
        assert all(config[c]["type_config"]["format"] for c in numeric)
        assert all(config[c].get("width") for c in order)  # every header shown whole


def test_the_bench_table_starts_with_its_file_and_the_speedup():
    arrow_fixes = []  # Streamlit logs a traceback each run for a column of mixed types (numbers and "—") it must fix
    handler = logging.Handler()
    handler.emit = arrow_fixes.append
    logging.getLogger("streamlit.dataframe_util").addHandler(handler)
    try:
        at = open_page("pages/race.py", 120)
    finally:
        logging.getLogger("streamlit.dataframe_util").removeHandler(handler)
    config, order = tables(at)[0]
    assert order[:2] == ["file", "speedup"]
    assert config["speedup"]["type_config"]["format"] == "%.2f×"
    assert "—" in at.dataframe[0].value["c"].tolist()  # a recorded bench without c
    assert not arrow_fixes, [r.getMessage() for r in arrow_fixes]


def test_the_calculators_cost_examples_show_the_expected_tokens_and_speedup_first():
    config, order = tables(open_page("pages/calculator.py", 120))[3]
    assert order[:3] == ["example", "speedup", "expected_tokens"]
    assert config["expected_tokens"]["label"] == "Expected tokens"
