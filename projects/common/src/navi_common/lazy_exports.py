"""The one module ``__getattr__`` of the packages whose exports load on first use (actor, environment).

Why: ``navi_actor.config`` imports each settings group (``navi_actor.<package>.config``) as a leaf
module, which runs the package's ``__init__`` first. Had those ``__init__`` files imported their
torch modules, importing the settings would load torch (6 s) and ``--help`` would be slow. So they
name each export's module and :func:`lazy_getattr` imports it when the name is first read (their
``TYPE_CHECKING`` imports keep the names visible to mypy and editors).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_getattr(package: str, exports: Mapping[str, str]) -> Callable[[str], Any]:
    """A module-level ``__getattr__`` for ``package`` (use: ``__getattr__ = lazy_getattr(...)``).

    Args:
        package: the package's ``__name__``, for the error message.
        exports: each exported name -> the module that defines it.

    Returns:
        A function that imports ``exports[name]`` and returns its ``name``, and raises
        ``AttributeError`` for any other name (so ``hasattr`` and ``from ... import`` behave).
    """

    def module_getattr(name: str) -> Any:
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(exports[name]), name)

    return module_getattr
