"""The fast loop (`python -m pytest -m "not vllm and not browser"`) needs neither the vLLM environment nor Chromium,
keeps the fast tests that talk to a fake server, and says how many tests it left for the full run."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FAST = "not vllm and not browser"


def collect(expression: str) -> tuple[list[str], str]:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "-m", expression],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return [line for line in done.stdout.splitlines() if "::" in line], done.stdout


@pytest.mark.slow
def test_the_fast_loop_leaves_out_the_browser_and_vllm_tests_and_says_so():
    fast, out = collect(FAST)
    assert fast
    assert not [t for t in fast if t.startswith("tests/e2e/")]
    assert not [t for t in fast if "/test_vllm_" in t]
    assert "tests/app/test_workload_server.py::test_check_then_measure_through_the_server" not in fast
    assert "tests/app/test_workload_server.py::test_public_mode_shows_a_listed_servers_model_without_its_path" in fast
    assert "tests/remote/test_client.py::test_public_mode_allows_only_listed_servers" in fast  # a fake server
    left = re.search(r"(\d+)/(\d+) tests collected \((\d+) deselected\)", out)
    assert left, out
    assert int(left[1]) == len(fast)
    assert int(left[2]) == len(fast) + int(left[3])
    assert f"{left[3]} tests deselected by -m '{FAST}': run the full suite with `python -m pytest`" in out
