"""The product's version: pyproject.toml's, read once."""
from __future__ import annotations

import functools
import tomllib
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"


@functools.cache
def product_version() -> str | None:
    """The version in pyproject.toml (None when it cannot be read)."""
    try:
        return tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]["version"]
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        return None
