"""Every table reads as words and figures: human headers (no snake_case), two decimals for speedups and α, three
significant figures where numbers are small, the columns that matter first, one p-value format (viz.tables)."""

import re

import pandas as pd
import pytest

from specviz.core import lab, tree_theory
from specviz.core.record import RunRecord
from specviz.core.theory import VerifyCost, best_k_table, cost_examples_table, expected_tokens_table, leviathan_table
from specviz.engine.loading.models import ASSETS
from specviz.measure.bench import headline, recorded_benches
from specviz.measure.summary import summarize
from specviz.measure.timing import Timing
from specviz.measure.workload import PairedRun
from specviz.viz import lab_charts, race_charts, workload_charts
from specviz.viz.tables import COLUMNS, column_order, column_specs, format_p, header, header_width, number_format


def paired(prompt: str, method: str = "draft") -> PairedRun:
    run = RunRecord(
        "specviz", method, 4, prompt, "", tuple(range(9)), (3, 2, 4), (4, 4, 4), (2, 1, 3), (3, 2, 4), (), 0.1
    )
    plain = RunRecord("specviz", "plain", 0, prompt, "", tuple(range(9)), (1,) * 9, None, None, None, (), 0.2)
    return PairedRun((run,), (plain,))


def every_table() -> dict[str, pd.DataFrame]:
    records = [paired("def add(a, b):"), paired("def sub(a, b):")]
    p, q = lab.shop_models(lab.POOR_DRAFT)
    shapes = dict.fromkeys(tree_theory.COMPARE_SHAPES)
    rates = tree_theory.decayed_rates(0.7, 0.5, 3)
    return {
        "workload per prompt": workload_charts.per_prompt_frame(records),
        "workload per tag": workload_charts.summary_frame(summarize(records)),
        "calculator leviathan": pd.DataFrame(leviathan_table()),
        "calculator best K": pd.DataFrame(best_k_table()),
        "calculator K = 4": pd.DataFrame(expected_tokens_table(4)),
        "calculator costs": pd.DataFrame(cost_examples_table()),
        "calculator trees": pd.DataFrame(tree_theory.shape_table(shapes, rates, 0.05, VerifyCost.ideal())),
        "bench": pd.DataFrame([headline(doc) for doc in recorded_benches(ASSETS / "bench")]),
        "race lanes": race_charts.lanes_frame([r.run for r in records]),
        "race lanes timed": race_charts.lanes_frame(
            [r.run for r in records], None, {"draft": Timing((1.2, 1.4), 0.0, 9)}, {"draft": 50.0}
        ),
        "bugs": lab_charts.bug_frame(lab.bug_checks(p, q, k=2, samples=500, length=3, seed=0)),
        "two tokens": lab_charts.flow_numbers(lab.two_token_flow(0.7, 0.9)),
    }


@pytest.mark.parametrize("name", list(every_table()))
def test_no_table_shows_a_snake_case_header(name):
    frame = every_table()[name]
    assert len(frame.columns) >= 3
    shown = [spec.header for spec in column_specs(list(frame.columns)).values()]
    assert not [h for h in shown if "_" in h], shown
    tokens = lab.two_token_flow(0.7, 0.9).tokens  # the two-token table's columns are its tokens, A and B
    assert not [c for c in frame.columns if c not in COLUMNS and c != "key" and c not in tokens], "header not chosen"


def test_the_columns_that_matter_come_first():
    tables = every_table()
    assert column_order(list(tables["workload per prompt"].columns))[:4] == ["prompt", "tag", "method", "speedup"]
    assert column_order(list(tables["bench"].columns))[0] == "file"
    costs = column_order(list(tables["calculator costs"].columns))
    assert costs[:3] == ["example", "speedup", "expected_tokens"]  # visible before the table scrolls at 1280 px
    narrow = list(tables["calculator K = 4"].columns)
    assert column_order(narrow) == narrow  # a table that fits keeps its order: α and K, then what they give
    assert COLUMNS["prompt"].width >= 300
    assert COLUMNS["file"].width >= header_width("cpu-float32-trees-vs-node-budget-code.json")  # the longest


@pytest.mark.parametrize("name", list(every_table()))
def test_every_header_fits_its_column(name):
    for spec in column_specs(list(every_table()[name].columns)).values():
        needed = header_width(spec.header)
        width = {"medium": 200, "large": 400}.get(spec.width, spec.width)
        assert width >= needed, spec


def test_speedups_and_alpha_read_with_two_decimals():
    assert COLUMNS["speedup"].format == "%.2f×"
    assert COLUMNS["predicted_speedup"].format == "%.2f×"
    assert COLUMNS["alpha"].format == "%.2f"
    assert COLUMNS["expected_tokens"].format == "%.2f"
    assert header("plain_tokens_per_s") == "Plain tokens/s"
    assert header("some_new_column") == "Some new column"  # a column nobody named still reads as words


def test_a_column_nobody_named_gets_a_format_from_its_values():
    assert number_format([1, 2, 3]) == "%d"
    assert number_format([0.5, 1.25, 3.0]) == "%.2f"
    assert number_format([0.0123, 0.5]) == "%.4f"  # three significant figures of the smallest
    assert number_format([0.05, 0.2]) == "%.4f"  # 0.0500
    assert number_format([0.0004]) == "%.2e"
    assert number_format([0.0, 2.5]) == "%.2f"  # zeros say nothing about the digits needed
    assert column_specs(["odd_one"], {"odd_one": [0.0123]})["odd_one"].format == "%.4f"


@pytest.mark.parametrize(
    "p, shown",
    [
        (0.4321, "p = 0.43"),
        (0.1, "p = 0.10"),
        (0.0123, "p = 0.012"),
        (0.001, "p = 0.001"),
        (9e-4, "p < 0.001"),
        (0.0, "p < 0.001"),
        (1.0, "p = 1.00"),
        (float("nan"), "p = n/a"),
    ],
)
def test_one_p_value_format(p, shown):
    assert format_p(p) == shown
    assert re.fullmatch(r"p (=|<) (\d\.\d+|n/a)", format_p(p))
