"""Heavy libraries loaded on their first use, so that commands and workers that never need them start fast.

The openai SDK alone takes about 0.6 s to import; a mobility or AgentBench evaluation, or `flask score` of one,
never calls the judge. `lazy(name)` returns a stand-in at once; the first attribute read imports the real module
with a plain `importlib.import_module`, whose per-module import lock makes every other thread wait until the
module is whole. (importlib.util.LazyLoader, used here before, lets a second thread see a half-run module on
Python 3.11: "module 'pandas' has no attribute 'DataFrame'".)

pandas imported through here runs as where pyarrow is not installed: pandas finds pyarrow (the mobility kind reads
Parquet with it) and would import it with itself, 37 MB and 0.1 s that none of this project's pandas code uses.
`ARROW_LOCK` keeps a pyarrow import of another thread from finding it hidden meanwhile."""
from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
from types import ModuleType

ARROW_LOCK = threading.Lock()  # held while pandas is imported with pyarrow hidden, and by pyarrow's own imports


def import_module(name: str) -> ModuleType:
    """importlib.import_module, except that pandas is imported with pyarrow hidden from it (see above)."""
    if name != "pandas" or name in sys.modules:
        return importlib.import_module(name)
    with ARROW_LOCK:
        hidden = "pyarrow" not in sys.modules
        if hidden:
            sys.modules["pyarrow"] = None  # type: ignore[assignment]  # what `import pyarrow` then fails on
        try:
            return importlib.import_module(name)
        finally:
            if hidden:
                del sys.modules["pyarrow"]


class _LazyModule(ModuleType):
    """A stand-in for a module that is imported when one of its attributes is first read."""

    def __getattr__(self, attribute: str):
        module = self.__dict__.get("_module")
        if module is None:
            module = import_module(self.__name__)  # thread-safe: waits for an import under way
            self.__dict__["_module"] = module
        return getattr(module, attribute)


def lazy(name: str) -> ModuleType:
    """The module `name`, imported when one of its attributes is first read (the module itself if it already is)."""
    if name in sys.modules:
        return sys.modules[name]
    if importlib.util.find_spec(name) is None:
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    return _LazyModule(name)
