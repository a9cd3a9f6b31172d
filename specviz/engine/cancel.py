"""A running job's stop check: whoever runs a job (the lecture hall's worker) installs one, and long loops call
`checkpoint()` between their steps (the decode loop once a round), so a run that nobody waits for any more, or that
has used up its time budget, stops there with the check's error rather than running to its end.

Outside such a job (the CLI, the tests, a page's own thread) no check is installed and `checkpoint()` does nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_CHECK: ContextVar[Callable[[], None] | None] = ContextVar("specviz_stop_check", default=None)


@contextmanager
def stop_check(check: Callable[[], None] | None) -> Iterator[None]:
    """Run the block with `check` installed: it raises (a SpecvizError saying why) when the job must stop."""
    token = _CHECK.set(check)
    try:
        yield
    finally:
        _CHECK.reset(token)


def checkpoint() -> None:
    """Stop here if the job running in this thread must stop (its check raises); else return at once."""
    check = _CHECK.get()
    if check is not None:
        check()
