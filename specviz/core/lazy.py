"""A module imported on its first use: torch, altair and pandas cost seconds to import, and commands such as
export-html or bench-player's bundle figures never touch them (a bundle with its templates cached draws no Altair
chart), so a module that needs them only inside its functions names them through `lazy` and a cold process pays
for them only when it does use them."""

from __future__ import annotations

import importlib
import sys
import types


class LazyModule(types.ModuleType):
    """Stands for a module until an attribute is read, then imports it and reads the attribute from it."""

    def __getattr__(self, name: str):
        module = importlib.import_module(self.__name__)
        self.__dict__.update(module.__dict__)  # later reads find it here, with no second lookup
        return getattr(module, name)


def lazy(name: str) -> types.ModuleType:
    """The module called `name`: the module itself when it is already imported, else a stand-in that imports it on
    first use."""
    module = sys.modules.get(name)
    return module if module is not None else LazyModule(name)
