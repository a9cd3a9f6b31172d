"""Comments and docstrings state their reason themselves: none cites a project issue by number or a design document
kept outside this repository, which a reader of the code cannot open. The sampler variants' `seen_in` strings cite
public bug reports on purpose (data the app shows, not comments), and only comments and docstrings are read here."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted(
    [*ROOT.glob("specviz/**/*.py"), *ROOT.glob("pages/*.py"), ROOT / "app.py", *ROOT.glob("tests/**/*.py")]
)
DOCS = sorted([*ROOT.glob("docs/*.md"), ROOT / "README.md"])

OUTSIDE_DOCUMENTS = r"\b(?:REFERENCE|DESIGN|FAMILY|PROBES)\.md\b|\.\./shared\b|\bshared/|\bseeds/"
ISSUE_NUMBERS = (
    r"\bissues? #?\d+"  # the word and a number
    r"|#\d+ items?\b|\(#\d{1,3}\)|(?:^|\s)#\d+:"  # a hash and a number, then an item, a bracket or a colon
    r"|\bitems? \d+(?: to \d+| and \d+)?[),:;]"  # an item of an issue's list
    r"|\bprobes? F\d|\bF\d{1,2}(?:, F\d{1,2})+|\bF\d{1,2}-F\d"  # a security review's finding codes
    r"|\bthe issue(?:'s)?\b"  # an issue named without its number is as closed to a reader
)
CITATION = re.compile(f"{OUTSIDE_DOCUMENTS}|{ISSUE_NUMBERS}", re.IGNORECASE)
# in the docs' prose: issue numbers and outside documents only
DOC_CITATION = re.compile(f"{OUTSIDE_DOCUMENTS}|\\bissues? #\\d+", re.IGNORECASE)


def docstrings(tree: ast.AST) -> list[tuple[int, str]]:
    """(first line, text) of the module's, every class's and every function's docstring."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                found.append((first.lineno, first.value.value))
    return found


def comments(text: str) -> list[tuple[int, str]]:
    """(line, text) of every # comment."""
    tokens = tokenize.generate_tokens(io.StringIO(text).readline)
    return [(t.start[0], t.string) for t in tokens if t.type == tokenize.COMMENT]


def citations(text: str, pattern: re.Pattern = CITATION) -> list[str]:
    """'line: the words cited' for each comment or docstring of one Python source that cites an issue or a document."""
    found = []
    for line, words in sorted([*comments(text), *docstrings(ast.parse(text))]):
        for offset, piece in enumerate(words.splitlines()):
            found += [f"{line + offset}: {m.group(0)!r} in {piece.strip()!r}" for m in pattern.finditer(piece)]
    return found


# ids with ":" for "/": a test path inside another test's id reads as that test to the fast-loop check
@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)).replace("/", ":"))
def test_no_comment_or_docstring_cites_an_issue_or_an_outside_document(path):
    assert citations(path.read_text(encoding="utf-8")) == [], "say the reason itself, not where it was asked for"


@pytest.mark.parametrize("path", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_docs_cite_no_issue_number_or_outside_document(path):
    text = path.read_text(encoding="utf-8")
    assert [m.group(0) for m in DOC_CITATION.finditer(text)] == []


@pytest.mark.parametrize(
    "source",
    [
        '"""Hostile traces (PROBES.md F10, F24): refused."""\n',
        "x = 1  # issue #22: at least 90 % of the steps\n",
        'def f():\n    """#42 item 1: the player rewrote the address."""\n',
        "class C:\n    '''Lecture mode (issue 27, item 10).'''\n",
        "y = 2  # faults under load (#24)\n",
        "z = 3  # the numbers of REFERENCE.md\n",
        "w = 4  # the bound of the issue's lecture hall\n",
        '"""Public mode (F1-F5, F9 of ../shared/ notes)."""\n',
    ],
)
def test_the_check_finds_each_kind_of_citation(source):
    assert citations(source)


def test_the_check_leaves_code_strings_colours_and_plain_numbers_alone():
    source = (
        '"""Streamlit greys text (#808495); K = 4 drafts, item by item, in float32."""\n'
        'SEEN = dict(seen_in="reported in SafeAILab/EAGLE issue #329")  # a public report, shown to users\n'
        "F32 = 1  # F32 is a dtype's name\n"
    )
    assert citations(source) == []
