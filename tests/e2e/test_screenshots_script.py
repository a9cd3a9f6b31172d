"""tests/e2e/screenshots.py, the script that retakes the README's screenshots, writes where it is told, at the sizes
the README shows (and the suite itself writes nothing under docs/)."""

import subprocess
import sys
from pathlib import Path

import pytest
from browser_helpers import ROOT
from PIL import Image


@pytest.mark.slow
def test_the_screenshot_script_writes_the_named_pictures_where_told(tmp_path):
    names = ["home-desktop", "calculator-lecture-1920", "lecture-residual-1920"]
    done = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "e2e" / "screenshots.py"), str(tmp_path), "--only", ",".join(names)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(f"{n}.png" for n in names)
    assert Image.open(tmp_path / "home-desktop.png").size == (1280, 800)
    assert Image.open(tmp_path / "lecture-residual-1920.png").size == (1920, 1080)
    assert Image.open(tmp_path / "calculator-lecture-1920.png").size == (1920, 1080)  # every page, lecture mode
    assert "workload-server.png left as it is" in done.stderr
    assert Path(done.stdout.split()[0]).parent == tmp_path
