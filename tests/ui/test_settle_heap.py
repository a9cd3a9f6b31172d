"""A cached model load leaves the heap settled: what is alive then is frozen out of the garbage collector's reach, and
Streamlit runs no full collection after each rerun, so a rerun never walks the model's objects."""

import gc
import time
import tomllib
from pathlib import Path

from specviz.ui.loaders import settle_heap

ROOT = Path(__file__).resolve().parents[2]


def test_settling_freezes_what_is_alive_so_a_collection_skips_it():
    kept = [{"layer": i, "weights": [i] * 3} for i in range(200_000)]  # stands for a model's many small objects
    try:
        start = time.perf_counter()
        gc.collect()
        walked = time.perf_counter() - start
        settle_heap()
        assert gc.get_freeze_count() >= len(kept)
        start = time.perf_counter()
        gc.collect()
        assert time.perf_counter() - start < walked / 2  # the frozen objects are not walked again
    finally:
        gc.unfreeze()  # the other tests' heap as it was
    assert len(kept) == 200_000


def test_streamlit_runs_no_collection_after_each_rerun():
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    assert config["runner"]["postScriptGC"] is False
