"""The three test tiers (README, docs/contributing.md): the inner loop (`-m "not vllm and not browser and not slow"`)
needs neither the vLLM environment nor Chromium and leaves out the slow tests; the pre-push loop adds the few tests
marked `prepush` (slow, vLLM or browser ones: one real check of each kind); the full suite runs everything. A loop
filtered by -m keeps the fast tests that talk to a fake server and says how many tests it left for the full run."""

import functools
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
INNER = "not vllm and not browser and not slow"
PREPUSH = f"{INNER} or prepush"
NO_TESTS = 5  # pytest's exit status when the expression selects nothing


TIER_MARKS = ("vllm", "browser", "slow", "prepush")
MARKS_OUT = "SPECVIZ_MARKS_OUT"  # tests/conftest.py writes every collected test's markers there


def collect_only(*options: str, env: dict | None = None) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *options],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert done.returncode in (0, NO_TESTS), done.stdout + done.stderr
    return done.stdout


@functools.cache  # the whole suite collected once per run (a collection takes seconds)
def marks() -> dict[str, set[str]]:
    """Every test's marker names, as tests/conftest.py writes them for SPECVIZ_MARKS_OUT."""
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "marks.json"
        collect_only(env={**os.environ, MARKS_OUT: str(out)})
        return {test: set(names) for test, names in json.loads(out.read_text()).items()}


def selected(expression: str) -> set[str]:
    """The tests a marker expression of the tier marks selects (as -m would: checked against pytest once below)."""
    return {
        test
        for test, names in marks().items()
        if eval(expression, {"__builtins__": {}}, {m: m in names for m in TIER_MARKS})  # noqa: S307 - our own
    }


@functools.cache
def inner_by_pytest() -> tuple[list[str], str]:
    """The inner loop as pytest's own -m selects it, and what the collection printed."""
    out = collect_only("-m", INNER)
    return [line for line in out.splitlines() if "::" in line], out


@pytest.mark.slow
def test_the_inner_loop_leaves_out_the_browser_vllm_and_slow_tests_and_says_so():
    inner, out = inner_by_pytest()
    assert inner and set(inner) == selected(INNER)
    assert not [t for t in inner if t.startswith("tests/e2e/")]
    assert not [t for t in inner if "/test_vllm_" in t]
    assert "tests/app/test_workload_server.py::test_check_then_measure_through_the_server" not in inner
    assert "tests/app/test_workload_server.py::test_public_mode_shows_a_listed_servers_model_without_its_path" in inner
    assert "tests/remote/test_client.py::test_public_mode_allows_only_listed_servers" in inner  # a fake server
    assert (
        "tests/test_markers.py::test_the_inner_loop_leaves_out_the_browser_vllm_and_slow_tests_and_says_so" not in inner
    )
    slow = selected("slow")
    assert slow and not slow & set(inner)
    left = re.search(r"(\d+)/(\d+) tests collected \((\d+) deselected\)", out)
    assert left, out
    assert int(left[1]) == len(inner)
    assert int(left[2]) == len(inner) + int(left[3])
    assert f"{left[3]} tests deselected by -m '{INNER}': run the full suite with `python -m pytest`" in out


@pytest.mark.slow
def test_the_pre_push_loop_is_the_inner_loop_and_the_few_marked_prepush_each_slow_vllm_or_browser():
    inner, prepush, marked = selected(INNER), selected(PREPUSH), selected("prepush")
    assert marked  # a chosen few, not none
    assert prepush == inner | marked
    pointless = selected("prepush and not slow and not vllm and not browser")
    assert not pointless  # the inner loop runs those already: the marker would mean nothing
