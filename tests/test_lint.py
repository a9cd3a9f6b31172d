"""The code stays lint-clean, formatted and type-checked (ruff and mypy, configured in pyproject.toml), checked with the
rest of the suite."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]


@pytest.mark.parametrize("command", [["check", "."], ["format", "--check", "."]], ids=["check", "format"])
def test_ruff(command):
    result = subprocess.run([sys.executable, "-m", "ruff", *command], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy():
    """mypy on specviz/ ([tool.mypy]): about 15 s with its cache (.mypy_cache), minutes on a cold one."""
    result = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.slow
def test_the_console_script_runs_the_cli():
    specviz = shutil.which("specviz")
    assert specviz, "the `specviz` command is missing: tests/install.sh installs it (pip install -e .)"
    result = subprocess.run(
        [specviz, "theory", "--alpha", "0.8", "--k", "4", "--c", "0.05", "--json"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert result.returncode == 0
    assert '"expected_tokens"' in result.stdout
