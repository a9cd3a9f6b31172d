"""Load a target and a draft by hub id or local path, pick device and dtype, and refuse pairs that cannot work.

Loading is safe by default: safetensors weights only and no remote code. A `ModelPair` is read-only once built and is
shared by every run (and every browser session): runs keep their KV caches to themselves.
"""

from __future__ import annotations

import os
import re
import socket
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from urllib.parse import urlparse

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, DynamicCache, PreTrainedModel, PreTrainedTokenizerBase

from specviz import methods
from specviz.core.settings import AUTO_THREADS
from specviz.engine.forward.threads import apply_threads
from specviz.engine.loading.install import GGUF_PACKAGES, cache_root, quietly
from specviz.engine.loading.shipped import BUNDLED_DRAFT, BUNDLED_PAIR, BUNDLED_TARGET, draft_dir, drafters_home
from specviz.engine.loading.vocab import COUNTS_FILE, TokenCounts, check_trimmable, load_counts
from specviz.engine.loading.vocab_map import VocabMap, build_vocab_map
from specviz.errors import IncompatiblePairError, ModelLoadError, SettingsError

ASSETS = Path(__file__).resolve().parents[3] / "assets"
DEVICES = ("auto", "cpu", "cuda", "mps")
DTYPES = ("auto", "float32", "bfloat16", "float16")
_HEAD_LOCK = threading.Lock()
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")


@dataclass(frozen=True, eq=False)
class ModelPair:
    """A target, an optional draft sharing its tokenizer, and what runs need to know about them."""

    target: PreTrainedModel
    draft: PreTrainedModel | None
    tokenizer: PreTrainedTokenizerBase
    target_name: str
    draft_name: str | None
    device: torch.device
    dtype: torch.dtype
    vocab_size: int  # V: ids below this are real tokens in both models (logits are sliced to it)
    context_length: int | None  # the target's maximum positions, when its config says
    sliding_window: int | None  # a run must stay shorter than this, or the cache could not be rolled back
    eos_ids: frozenset[int]
    token_texts: tuple[str, ...]  # decoded text of every token id, for the trace
    draft_counts: TokenCounts | None = None  # token frequencies shipped beside the draft, for a trimmed vocabulary
    heads: Mapping[str, str] = field(default_factory=dict)  # method -> the feature head it drafts with (given, or
    #                                                          found beside the target), loaded when first used
    crossing: VocabMap | None = (
        None  # a draft with a tokenizer of its own (engine/loading/vocab_map.py): only the methods
    )
    #                                   that draft across tokenizers (TLI, SLEM) run it; None: one shared tokenizer

    def head(self, method: str) -> str | None:
        """The head directory a feature-head method drafts with (None: the method reads none, or none was found)."""
        return self.heads.get(method)

    @cached_property
    def _loaded_heads(self) -> dict:
        return {}  # method -> its loaded head, filled by load_head_for

    def load_head_for(self, method: str):
        """The head a feature-head method drafts with, loaded once on first use and read-only like the models: a
        clear error now when it is missing or does not fit this target; None for a method that reads no head."""
        if method not in HEAD_KINDS:
            return None
        with _HEAD_LOCK:  # two sessions asking at once load it once
            if method not in self._loaded_heads:
                self._loaded_heads[method] = self._load_head(method)
            return self._loaded_heads[method]

    def _load_head(self, method: str):
        kind = HEAD_KINDS[method]
        directory = self.head(method)
        if directory is None:
            raise SettingsError(
                f"The {kind.name} method needs {kind.needs} trained for this target, and none was found beside "
                f"{recorded_name(self.target_name)} (a {kind.beside}/ directory next to it) or given: give "
                f"{kind.one} with --head DIR, or train {kind.one} for the bundled target with "
                f"`python -m specviz train-tiny {kind.stage}`."
            )
        return kind.load(directory, self.target, recorded_name(self.target_name))

    def draft_vocab_ids(self, n: int) -> torch.Tensor | None:
        """(n,) the draft vocabulary of a run (its n most frequent tokens), or None for the full vocabulary (n = 0)."""
        if not n:
            return None
        if self.draft is None:
            raise SettingsError("A draft vocabulary needs a draft model; this pair has none.")
        check_trimmable(self.draft)
        if self.draft_counts is None:
            raise SettingsError(
                f"The draft {self.draft_name} has no token counts ({COUNTS_FILE} beside its weights), so there is no "
                "frequency order to trim its vocabulary by: count tokens over your own text with `python -m specviz "
                "draft-vocab --draft DIR TEXT_FILES...`, or use the full vocabulary (draft vocabulary 0)."
            )
        return self.draft_counts.top_ids(n, self.vocab_size)

    @property
    def recommended_draft_vocab(self) -> int:
        """The draft vocabulary its counts recommend (0 = the full vocabulary, also when there are no counts)."""
        n = self.draft_counts.recommended if self.draft_counts and self.draft is not None else 0
        return n if n < self.vocab_size else 0  # a recommendation as large as the vocabulary trims nothing

    def describe(self) -> dict:
        """The pair as records and exports name it (no local path of the bundled pair: see recorded_name)."""
        return {
            "target": recorded_name(self.target_name),
            "draft": recorded_name(self.draft_name),
            "device": str(self.device),
            "dtype": str(self.dtype).removeprefix("torch."),
            **(self.crossing.describe() if self.crossing else {}),
        }


def recorded_name(source: str | None) -> str | None:
    """A model source as a trace, a workload export or a bench file names it: the bundled pair relative to the
    repository (where it was cloned is nobody's business, and the file reads the same on every machine), a converted
    pair by its name."""
    root = str(ASSETS.parent) + "/"
    if source and source.startswith(root):
        return source.removeprefix(root)
    return converted_pair_name(source) or source


def converted_pair_name(source: str | None) -> str | None:
    """The pair's name (smollm2) for its converted copy in the user's cache (smollm2-draft for the draft assembled
    beside it), whose absolute path names a home directory and reads differently on every machine; None for any other
    source."""
    models = str(cache_root() / "models") + "/"
    if not source or not str(source).rstrip("/").startswith(models):
        return None
    name = str(source).rstrip("/").removeprefix(models)
    names = {package.name: package.pair for package in GGUF_PACKAGES}
    names |= {draft_dir(package).name: f"{package.pair}-draft" for package in GGUF_PACKAGES}  # its assembled draft
    return names.get(name)


def choose_device(requested: str | None = "auto") -> torch.device:
    """cuda > mps > cpu for "auto"; an explicit choice must be available here."""
    requested = (requested or "auto").lower()
    if requested not in DEVICES:
        raise SettingsError(f"device must be one of {', '.join(DEVICES)}; got {requested!r}.")
    available = {"cpu": True, "cuda": torch.cuda.is_available(), "mps": torch.backends.mps.is_available()}
    if requested == "auto":
        return torch.device(next(name for name in ("cuda", "mps", "cpu") if available[name]))
    if not available[requested]:
        raise SettingsError(f"device {requested!r} is not available on this machine; use auto or cpu.")
    return torch.device(requested)


def synchronize(device: torch.device) -> None:
    """Wait for the device's queued work, so a wall-clock time covers the work itself (a no-op on CPU)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "mps":
        torch.mps.synchronize()


def default_dtype(device: torch.device) -> torch.dtype:
    """bfloat16 on CUDA when supported, else float16; float32 on CPU, where greedy speculative output then matches
    plain decoding token for token (bfloat16 is faster on CPUs with native support, but rounds a K + 1-token verify
    pass differently from one-token steps, so near-ties can flip: an explicit choice)."""
    if device.type == "cuda":
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    if device.type == "mps":
        return torch.float16
    return torch.float32


def choose_dtype(requested: str | torch.dtype | None, device: torch.device) -> torch.dtype:
    """The precision to run in: "auto" is default_dtype(device); an explicit one must work on that device."""
    if isinstance(requested, torch.dtype):
        return requested
    requested = (requested or "auto").lower()
    if requested not in DTYPES:
        raise SettingsError(f"dtype must be one of {', '.join(DTYPES)}; got {requested!r}.")
    if requested == "auto":
        return default_dtype(device)
    if device.type == "cpu" and requested == "float16":
        raise SettingsError("float16 is slow on CPU and some operations lack it there: use bfloat16 or float32.")
    if device.type == "cuda" and requested == "bfloat16" and not torch.cuda.is_bf16_supported():
        raise SettingsError("This GPU has no bfloat16 support: use float16 or float32.")
    return getattr(torch, requested)


def load_pair(
    target: str = BUNDLED_TARGET,
    draft: str | None = BUNDLED_DRAFT,
    device: str | None = "auto",
    dtype: str | torch.dtype | None = None,
    allow_pickle: bool = False,
    trust_remote_code: bool = False,
    head: str | None = None,
    threads: str | int = AUTO_THREADS,
    cross_vocab: bool = False,
) -> ModelPair:
    """Load target (and draft, unless None) onto one device, check they share a tokenizer, and freeze them for reuse.
    cross_vocab: a draft whose tokenizer differs is mapped to the target's (engine/loading/vocab_map.py) instead of
    refused, for the methods that draft across tokenizers. head: a feature head directory (its kind told apart by its
    config: the registry's HeadSpec) for its own method; the other kinds are looked for beside the target (each loaded
    only when a run uses it). threads: torch's thread count on a CPU, auto or a number (engine/forward/threads.py)."""
    if not Path(BUNDLED_TARGET).is_dir() and BUNDLED_TARGET in (target, draft):
        raise ModelLoadError(
            f"The bundled model pair is missing from {BUNDLED_PAIR}: build it with `python -m specviz train-tiny`, "
            "or give a target and draft by hub id or path."
        )
    heads = find_heads(target, head)  # a --head that is no head is refused before any model loads
    dev = choose_device(device)
    dtype = choose_dtype(dtype, dev)
    tokenizer = load_tokenizer(target, trust_remote_code)
    target_model = load_model(target, dev, dtype, allow_pickle, trust_remote_code)
    draft_model, draft_tok = None, None
    cross_vocab = cross_vocab and draft is not None  # no draft: nothing to cross
    if draft is not None:
        draft_tok = load_tokenizer(draft, trust_remote_code)
        cross_vocab = cross_vocab and draft_tok.get_vocab() != tokenizer.get_vocab()
        if not cross_vocab:
            check_same_tokenizer(tokenizer, draft_tok, target, draft)
        draft_model = load_model(draft, dev, dtype, allow_pickle, trust_remote_code)
    models = [m for m in (target_model, draft_model) if m is not None]
    apply_threads(threads, target_model)
    sharing = [target_model] if cross_vocab else models  # the models that number tokens as the target's tokenizer
    vocab_size = min([len(tokenizer)] + [m.get_output_embeddings().weight.shape[0] for m in sharing])
    crossing = None
    if cross_vocab:
        draft_vocab = min(len(draft_tok), draft_model.get_output_embeddings().weight.shape[0])
        names = (recorded_name(target), recorded_name(draft))
        crossing = build_vocab_map(tokenizer, draft_tok, vocab_size, draft_vocab, dev, *names)
    return ModelPair(
        target=target_model,
        draft=draft_model,
        tokenizer=tokenizer,
        target_name=target,
        draft_name=draft,
        device=dev,
        dtype=dtype,
        vocab_size=vocab_size,
        context_length=_context_length(target_model),
        sliding_window=_sliding_window(models),
        eos_ids=_eos_ids(target_model, tokenizer),
        token_texts=tuple(tokenizer.batch_decode([[i] for i in range(vocab_size)])),
        draft_counts=load_counts(draft) if draft is not None and Path(draft).is_dir() and not crossing else None,
        heads=heads,
        crossing=crossing,
    )


HEAD_KINDS = {name: m.head for name, m in methods.REGISTRY.items() if m.head is not None}  # method -> its head kind


def find_heads(target: str, head: str | None) -> dict[str, str]:
    """Method -> the feature head directory it drafts with: the head given (its kind told apart by its config) for
    its own method, and for each other kind the one beside a local target (for a target converted from a package,
    also the one its pair ships: engine/loading/shipped.py)."""
    found = {}
    if head is not None:
        path = Path(str(head).strip()).expanduser()
        method = next((method for method, kind in HEAD_KINDS.items() if kind.recognises(path)), None)
        if method is None:
            raise ModelLoadError(
                f"{str(path)!r} is not a feature head directory: it needs config.json and model.safetensors, as "
                + "; ".join(
                    f"{k.holds} (`python -m specviz train-tiny {k.stage}` writes one)" for k in HEAD_KINDS.values()
                )
                + "."
            )
        found[method] = str(path)
    local = Path(str(target)).expanduser()
    if local.is_dir():
        shipped = drafters_home(local)
        for home in (local.parent,) + ((shipped,) if shipped else ()):
            found = heads_in(home) | found
    return found


def heads_in(home: Path) -> dict[str, str]:
    """Method -> the head directory of each kind found in `home` (a pair's folder of drafters)."""
    found = {method: home / kind.beside for method, kind in HEAD_KINDS.items()}
    return {method: str(directory) for method, directory in found.items() if HEAD_KINDS[method].recognises(directory)}


def head_beside(target: str, method: str) -> str | None:
    """The head a feature-head method would find beside this target (None: none there)."""
    return find_heads(target, None).get(method)


def load_tokenizer(source: str, trust_remote_code: bool = False) -> PreTrainedTokenizerBase:
    return _from_source(AutoTokenizer, source, "tokenizer", trust_remote_code=trust_remote_code)


def load_model(
    source: str, device: torch.device, dtype: torch.dtype, allow_pickle: bool = False, trust_remote_code: bool = False
) -> PreTrainedModel:
    """Load one causal LM in eval mode on `device`, refusing pickle weights and caches that cannot be rolled back."""
    try:
        model = _from_source(
            AutoModelForCausalLM,
            source,
            "model",
            dtype=dtype,
            use_safetensors=None if allow_pickle else True,
            trust_remote_code=trust_remote_code,
        )
    except (RuntimeError, MemoryError) as exc:  # torch.OutOfMemoryError is a RuntimeError
        if not isinstance(exc, (torch.OutOfMemoryError, MemoryError)) and "memory" not in str(exc).lower():
            raise
        raise ModelLoadError(f"Ran out of memory loading {source!r}: pick a smaller model or another device.") from exc
    _require_croppable_cache(model, source)
    model.requires_grad_(False)
    return model.to(device).eval()


def check_same_tokenizer(
    target_tok: PreTrainedTokenizerBase, draft_tok: PreTrainedTokenizerBase, target_name: str, draft_name: str
) -> None:
    """Both models must number tokens identically; compare the vocabularies, not `vocab_size` (embeddings get
    padded)."""
    target_vocab, draft_vocab = target_tok.get_vocab(), draft_tok.get_vocab()
    if target_vocab == draft_vocab:
        return
    differing = sorted(t for t in target_vocab.keys() | draft_vocab.keys() if target_vocab.get(t) != draft_vocab.get(t))
    example = differing[0]
    raise IncompatiblePairError(
        f"The draft {draft_name!r} and the target {target_name!r} use different tokenizers: {len(differing)} token(s) "
        f"are missing from one of them or have different ids (e.g. {example!r} is id {target_vocab.get(example)} in "
        f"the target and {draft_vocab.get(example)} in the draft). Speculative decoding compares the two models "
        "token by token, so they must share a tokenizer: pick a draft from the same model family as the target, or "
        "draft across tokenizers with --method tli or --method slem."
    )


def _from_source(auto_class, source: str, what: str, **kwargs):
    """from_pretrained with clear messages: local directory, hub cache, or hub download (only when reachable)."""
    source = str(source).strip()
    if not source:
        raise ModelLoadError(f"No {what} given: enter a Hugging Face hub id (e.g. gpt2) or a local directory.")
    path = Path(source).expanduser()
    if path.exists() or source.startswith((".", "/", "~")) or "\\" in source:
        return _from_directory(auto_class, path, what, **kwargs)
    if not _HUB_ID.match(source):
        raise ModelLoadError(
            f"{source!r} is neither an existing directory nor a valid hub id "
            "(like 'gpt2' or 'HuggingFaceTB/SmolLM2-135M')."
        )
    try:
        return quietly(auto_class.from_pretrained, source, local_files_only=True, **kwargs)
    except OSError as exc:
        if _mentions_safetensors(exc):
            raise _pickle_refused(source) from exc
    if os.environ.get("HF_HUB_OFFLINE", "0").lower() in ("1", "true", "yes") or not _hub_reachable():
        raise ModelLoadError(
            f"Cannot load {source!r}: it is not in the local Hugging Face cache and the hub cannot be reached from "
            "here (offline). On a connected machine run `hf download "
            f"{source}` and copy ~/.cache/huggingface to this one, or save the model to a directory and give its path."
        )
    try:
        return quietly(auto_class.from_pretrained, source, **kwargs)
    except OSError as exc:
        if _mentions_safetensors(exc):
            raise _pickle_refused(source) from exc
        raise ModelLoadError(
            f"Cannot load {source!r} from the Hugging Face hub: {_first_line(exc)} Check the id (and, for a gated or "
            "private model, log in with `hf auth login`)."
        ) from exc


def _from_directory(auto_class, path: Path, what: str, **kwargs):
    if not path.is_dir():
        raise ModelLoadError(
            f"{str(path)!r} is not a directory. Give a directory saved with save_pretrained, or a hub id."
        )
    if what == "model" and not (path / "config.json").is_file():
        raise ModelLoadError(f"{str(path)!r} is not a model directory: it has no config.json.")
    try:
        return quietly(auto_class.from_pretrained, str(path), local_files_only=True, **kwargs)
    except (OSError, ValueError, KeyError) as exc:
        if _mentions_safetensors(exc):
            raise _pickle_refused(str(path)) from exc
        raise ModelLoadError(f"Cannot load a {what} from {str(path)!r}: {_first_line(exc)}") from exc


def _hub_reachable(timeout_s: float = 3.0) -> bool:
    """A quick TCP connect to the hub, so an offline machine gets a message in seconds instead of minutes of retries."""
    host = urlparse(os.environ.get("HF_ENDPOINT", "https://huggingface.co")).hostname or "huggingface.co"
    try:
        socket.create_connection((host, 443), timeout=timeout_s).close()
        return True
    except OSError:
        return False


def _mentions_safetensors(exc: Exception) -> bool:
    return "safetensors" in str(exc).lower()


def _pickle_refused(source: str) -> ModelLoadError:
    return ModelLoadError(
        f"{source!r} has no safetensors weights, only pickle files, which can run arbitrary code when loaded. "
        "Convert it to safetensors, or, if you trust its author, allow pickle weights explicitly (--allow-pickle)."
    )


def _first_line(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def _require_croppable_cache(model: PreTrainedModel, source: str) -> None:
    cache = DynamicCache(config=model.config)
    if not all(getattr(layer, "is_croppable", True) for layer in cache.layers):
        raise ModelLoadError(
            f"{source!r} keeps a recurrent or linear-attention state that cannot be rolled back after a rejected "
            "draft, so it cannot be used for speculative decoding here. Pick a standard attention model."
        )


def _sliding_window(models: list[PreTrainedModel]) -> int | None:
    windows = [
        layer.sliding_window
        for model in models
        for layer in DynamicCache(config=model.config).layers
        if getattr(layer, "is_sliding", False)
    ]
    return min(windows) if windows else None


def _context_length(model: PreTrainedModel) -> int | None:
    config = model.config.get_text_config()
    for name in ("max_position_embeddings", "n_positions", "max_sequence_length"):
        if isinstance(getattr(config, name, None), int):
            return getattr(config, name)
    return None


def _eos_ids(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase) -> frozenset[int]:
    ids = set()
    for value in (getattr(model.generation_config, "eos_token_id", None), tokenizer.eos_token_id):
        if isinstance(value, int):
            ids.add(value)
        elif isinstance(value, (list, tuple)):
            ids.update(v for v in value if isinstance(v, int))
    return frozenset(ids)
