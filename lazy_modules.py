"""Heavy libraries loaded on their first use, so that commands and workers that never need them start fast.

The openai SDK alone takes about 0.6 s to import; a mobility or AgentBench evaluation, or `flask score` of one,
never calls the judge. `lazy(name)` returns the module at once and runs its code when one of its attributes is
first read (importlib.util.LazyLoader, the standard library's recipe)."""
from __future__ import annotations

import importlib.util
import sys
from types import ModuleType


def lazy(name: str) -> ModuleType:
    """The module `name`, imported when one of its attributes is first read (at once if it already is)."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    return module
