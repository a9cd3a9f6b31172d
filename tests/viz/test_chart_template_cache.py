"""Chart templates kept on disk (viz.chart_templates.cache_file): a fresh process binds a bundle's charts from the
file without building a template or importing Altair, and export-html imports neither torch, transformers nor
Altair; a damaged file is rebuilt."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TRACE = ROOT / "assets" / "traces" / "early-rejection-residual.json"
HEAVY = ("torch", "transformers", "altair", "pandas")
BUNDLE = f"""
import json, sys
from specviz.core.trace_json import trace_from_json
from specviz.viz import chart_templates as ct
from specviz.viz.player_bundle import bundle_json, player_bundle
built = []
make = ct.make_template
ct.make_template = lambda *a: built.append(1) or make(*a)
text = bundle_json(player_bundle(trace_from_json(open({str(TRACE)!r}).read())))
print(json.dumps({{"built": len(built), "heavy": [m for m in {HEAVY!r} if m in sys.modules], "size": len(text)}}))
"""


def run_python(code: str, folder: Path, *args: str) -> subprocess.CompletedProcess:
    env = os.environ | {"SPECVIZ_TEMPLATE_CACHE": str(folder), "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, *args, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True)


def bundle_in_a_fresh_process(folder: Path) -> dict:
    done = run_python(BUNDLE, folder)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_a_fresh_process_binds_from_the_kept_templates_without_altair(tmp_path):
    first = bundle_in_a_fresh_process(tmp_path)
    assert first["built"] >= 3 and "altair" in first["heavy"]
    (kept,) = tmp_path.glob("chart-templates-*.json")
    second = bundle_in_a_fresh_process(tmp_path)
    assert second == {"built": 0, "heavy": [], "size": first["size"]}  # the same bundle, from the file alone
    kept.write_text("{damaged", encoding="utf-8")
    assert bundle_in_a_fresh_process(tmp_path)["built"] == first["built"]  # rebuilt, and kept again
    assert json.loads(kept.read_text(encoding="utf-8"))["format"] == 1


@pytest.mark.slow
def test_export_html_imports_no_model_or_chart_library(tmp_path):
    bundle_in_a_fresh_process(tmp_path)  # templates kept, as after any earlier run
    code = (
        "import sys, runpy\n"
        f"sys.argv = ['specviz', 'export-html', {str(TRACE)!r}, '-o', {str(tmp_path / 'run.html')!r}]\n"
        "try:\n    runpy.run_module('specviz', run_name='__main__')\nexcept SystemExit:\n    pass\n"
        f"print([m for m in {HEAVY!r} if m in sys.modules])"
    )
    done = run_python(code, tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "[]"
    assert (tmp_path / "run.html").stat().st_size > 100_000
