"""Drafters that ship in the repository for a target converted from a package (assets/models/<pair>/).

A feature head (a folder of its own, in vLLM's format) is read where it ships. A draft model ships without its
embeddings: they are the target's own rows, frozen while it trained, and they are 28 M of its 35 M parameters, so
the repository holds only what was trained (`draft/layers.safetensors`: its decoder layers and final norm, bfloat16,
beside its config and token counts). The first use puts the two together into a plain Hugging Face model in the
user's cache, `<cache>/models/<target>-draft/`, which loads, trims and serves (vLLM) like any other draft; it is
assembled again when the shipped layers change.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from functools import lru_cache
from pathlib import Path

from specviz.engine.loading.install import DONE_FILE, GGUF_PACKAGES, GgufPackage, cache_root, converted_dir, sha256_of

SHIPPED_ROOT = Path(__file__).resolve().parents[3] / "assets" / "models"
BUNDLED_PAIR = SHIPPED_ROOT / "pystdlib"  # the toy pair, whole, in the repository
BUNDLED_TARGET = str(BUNDLED_PAIR / "target")
BUNDLED_DRAFT = str(BUNDLED_PAIR / "draft")
LAYERS_FILE = "layers.safetensors"  # a shipped draft's trained tensors (no embeddings)
EMBEDDINGS = "model.embed_tokens.weight"
COPIED_FROM_DRAFT = ("config.json", "token_counts.json", "training.json")
COPIED_FROM_TARGET = ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja", "generation_config.json")


def drafters_dir(source: GgufPackage) -> Path:
    """Where the pair's drafters ship: assets/models/<pair>/."""
    return SHIPPED_ROOT / source.pair


def shipped_draft(source: GgufPackage) -> Path | None:
    """The shipped draft's folder (None: this pair ships no draft model)."""
    folder = drafters_dir(source) / "draft"
    return folder if (folder / LAYERS_FILE).is_file() else None


def draft_dir(source: GgufPackage) -> Path:
    """Where the assembled draft lives: beside the converted target in the cache."""
    return cache_root() / "models" / f"{source.name}-draft"


def is_assembled(source: GgufPackage) -> bool:
    """Whether the cache holds the draft assembled from the layers that ship now."""
    shipped, done = shipped_draft(source), draft_dir(source) / DONE_FILE
    if shipped is None or not done.is_file():
        return False
    try:
        return json.loads(done.read_text(encoding="utf-8")).get("layers_sha256") == layers_sha256(shipped / LAYERS_FILE)
    except (OSError, ValueError):
        return False


def layers_sha256(path: Path) -> str:
    """The shipped layers' sha256, hashed once per version of the file (pages ask on every rerun)."""
    stat = path.stat()
    return _sha256_once(str(path), stat.st_mtime_ns, stat.st_size)


@lru_cache(maxsize=8)
def _sha256_once(path: str, mtime_ns: int, size: int) -> str:
    return sha256_of(Path(path))


def drafters_home(target: str | Path) -> Path | None:
    """For a target converted from a package (its conversion record names the file's sha256), the folder where its
    pair's drafters ship; None for any other target."""
    record = Path(str(target)).expanduser() / DONE_FILE
    if not record.is_file():
        return None
    try:
        sha = json.loads(record.read_text(encoding="utf-8")).get("sha256")
    except (OSError, ValueError):
        return None
    source = next((s for s in GGUF_PACKAGES if s.sha256 == sha), None)
    return drafters_dir(source) if source else None


def assemble_draft(source: GgufPackage, target_dir: Path | None = None) -> Path:
    """The shipped layers plus the target's embeddings, saved as one float32 model with the target's tokenizer, into
    the cache (atomically, as the conversion is)."""
    import torch
    from safetensors import safe_open
    from safetensors.torch import load_file, save_file

    shipped = shipped_draft(source)
    if shipped is None:
        raise FileNotFoundError(f"{drafters_dir(source)} ships no draft model ({LAYERS_FILE}).")
    target_dir = Path(target_dir or converted_dir(source))
    final = draft_dir(source)
    final.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{final.name}-", dir=final.parent))
    try:
        tensors = {name: t.to(torch.float32) for name, t in load_file(str(shipped / LAYERS_FILE)).items()}
        with safe_open(str(target_dir / "model.safetensors"), framework="pt") as weights:
            tensors[EMBEDDINGS] = weights.get_tensor(EMBEDDINGS).to(torch.float32).contiguous()
        save_file(tensors, str(work / "model.safetensors"), metadata={"format": "pt"})
        config = json.loads((shipped / "config.json").read_text(encoding="utf-8"))
        config.update(tie_word_embeddings=True, dtype="float32")
        (work / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
        for name in COPIED_FROM_DRAFT:
            if name != "config.json" and (shipped / name).is_file():  # the config is written above, as assembled
                shutil.copy(shipped / name, work / name)
        for name in COPIED_FROM_TARGET:
            if (target_dir / name).is_file():
                shutil.copy(target_dir / name, work / name)
        record = {"layers": str(shipped / LAYERS_FILE), "layers_sha256": layers_sha256(shipped / LAYERS_FILE)}
        (work / DONE_FILE).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
        if final.exists():
            shutil.rmtree(final)
        os.replace(work, final)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return final


def ensure_draft(source: GgufPackage) -> Path | None:
    """The assembled draft (assembled first when missing or stale); None when the pair ships none."""
    if shipped_draft(source) is None:
        return None
    return draft_dir(source) if is_assembled(source) else assemble_draft(source)


def split_draft(folder: Path, out: Path) -> Path:
    """The shipped form of a whole draft folder saved by save_pretrained: its trained tensors alone (no embeddings,
    no tied LM head) in bfloat16, with its config and token counts. The inverse of assemble_draft."""
    import torch
    from safetensors.torch import load_file, save_file

    out.mkdir(parents=True, exist_ok=True)
    tensors = load_file(str(folder / "model.safetensors"))
    kept = {k: v.to(torch.bfloat16).contiguous() for k, v in tensors.items() if k not in (EMBEDDINGS, "lm_head.weight")}
    save_file(kept, str(out / LAYERS_FILE), metadata={"format": "pt"})
    for name in COPIED_FROM_DRAFT:
        if (folder / name).is_file() and folder != out:
            shutil.copy(folder / name, out / name)
    return out
