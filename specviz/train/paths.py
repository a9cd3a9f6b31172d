"""Where the recipe reads its prompts and writes the pair, and how big the pair may be (shared by the stages, the
export and the card)."""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_OUT = REPO_ROOT / "assets" / "models" / "pystdlib"
WORKLOADS = [REPO_ROOT / "assets" / "workloads" / "code.jsonl", REPO_ROOT / "assets" / "workloads" / "prose.jsonl"]
MAX_TOTAL_MB = 40.0  # the exported pair, both directories
