"""The layers hold: pages / cli -> ui / train -> viz / measure / remote -> engine -> core, with no import cycles,
streamlit only in ui/ and pages/, and neither transformers nor pandas in core (tests/house/layers.py)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from layers import violations

ROOT = Path(__file__).resolve().parents[2]


def test_the_source_tree_keeps_its_layers():
    assert violations(ROOT) == []


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return root


CLEAN = {
    "specviz/__init__.py": "",
    "specviz/core/__init__.py": "",
    "specviz/core/verify.py": "import torch\n",
    "specviz/engine/__init__.py": "",
    "specviz/engine/decode.py": "from specviz.core import verify\n",
    "specviz/ui/__init__.py": "",
    "specviz/ui/controls.py": "import streamlit as st\nfrom specviz.engine import decode\n",
    "pages/rounds.py": "import streamlit as st\nfrom specviz.ui import controls\n",
}


def test_a_clean_fixture_tree_passes(tmp_path):
    assert violations(write(tmp_path, CLEAN)) == []


@pytest.mark.parametrize(
    "name, text, expected",
    [
        ("specviz/core/bad.py", "from specviz.engine.decode import x\n", "core (layer 0) may not import engine"),
        ("specviz/engine/bad.py", "def f():\n    from specviz.ui import controls\n", "engine (layer 1) may not"),
        ("specviz/viz/bad.py", "import streamlit\n", "streamlit belongs in app, pages, ui only"),
        ("specviz/core/bad.py", "import pandas as pd\n", "core must not import pandas"),
        ("specviz/core/bad.py", "from transformers import AutoModel\n", "core must not import transformers"),
        ("specviz/engine/decode.py", "from specviz.engine import tree\n", "import cycle"),
    ],
    ids=["layer", "function-level", "streamlit", "pandas", "transformers", "cycle"],
)
def test_each_kind_of_crossing_is_caught_in_a_fixture_tree(tmp_path, name, text, expected):
    files = {**CLEAN, "specviz/engine/tree.py": "def f():\n    from specviz.engine import decode\n", name: text}
    found = violations(write(tmp_path, files))
    assert any(expected in v for v in found), found


def test_type_checking_imports_do_not_count(tmp_path):
    lazy = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from specviz.engine.decode import x\n"
    assert violations(write(tmp_path, {**CLEAN, "specviz/core/typed.py": lazy})) == []
