"""How many threads torch runs on a CPU. A decoding step of a narrow model is a chain of small matrix-vector products
(the bundled target's widest is 256 x 768): splitting one across cores gains little, and a thread that waits for a
core another process holds stalls the whole step. On the 2-core machine measured, a second thread gained at most 5 %
when it was quiet, and with one core busy elsewhere it took plain decoding of the bundled target from 376 to 118
tokens/s (docs/engine.md, "Threads"). So `auto` runs narrow models on one thread and wider ones on torch's default
(every core); a number asks for exactly that many."""

from __future__ import annotations

import os

import torch

from specviz.core.settings import NARROW_WIDTH, THREADS_ENV, parse_threads

TORCH_DEFAULT = torch.get_num_threads()  # torch's own choice, taken before specviz sets any


def auto_threads(hidden_size: int, default: int) -> int:
    """One thread for a model no wider than NARROW_WIDTH, torch's default (default) for a wider one."""
    return 1 if hidden_size <= NARROW_WIDTH else default


def apply_threads(setting: str | int, model: torch.nn.Module, default: int = TORCH_DEFAULT) -> int:
    """Set torch's thread count for this model on a CPU (a GPU's kernels do not use them) and return it. torch's
    count is the process's: the last pair loaded sets it for every run after."""
    if model.device.type != "cpu":
        return torch.get_num_threads()
    width = getattr(model.config, "hidden_size", None)
    count = setting if isinstance(setting, int) else default if width is None else auto_threads(width, default)
    torch.set_num_threads(count)
    return count


def threads_from_environment() -> str | int:
    """The app's setting: $SPECVIZ_THREADS, else auto."""
    return parse_threads(os.environ.get(THREADS_ENV))
