"""The pages a visitor opens first draw their title before importing the models and charts.

On a fresh server those imports take seconds (torch, transformers, Altair); a page that imports them first stays
blank meanwhile, which a lecture audience reads as broken.
"""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("torch", "transformers", "altair", "pandas")


def top_level_statements(page: str) -> list[ast.stmt]:
    return ast.parse((ROOT / "pages" / page).read_text()).body


def draws_header(statement: ast.stmt) -> bool:
    return "page_header(" in ast.unparse(statement)


def imports_specviz_beyond_header(statement: ast.stmt) -> bool:
    if isinstance(statement, ast.ImportFrom):
        return (statement.module or "").startswith("specviz") and statement.module != "specviz.ui.header"
    if isinstance(statement, ast.Import):
        return any(alias.name.startswith("specviz") for alias in statement.names)
    return False


@pytest.mark.parametrize("page", ["home.py", "rounds.py"])
def test_the_page_draws_its_header_before_importing_the_rest_of_specviz(page):
    statements = top_level_statements(page)
    header_at = next(i for i, s in enumerate(statements) if draws_header(s))
    assert not any(imports_specviz_beyond_header(s) for s in statements[:header_at])


def test_the_header_module_imports_nothing_heavy():
    code = f"import sys, specviz.ui.header; print([m for m in {HEAVY!r} if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
