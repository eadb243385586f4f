"""Package attributes that load their module on first use (PEP 562), so that importing a
package stays cheap (issue 26: ``import dodb`` and ``dodb --help`` load no engine)."""
from __future__ import annotations

import sys
from importlib import import_module
from typing import Any, Callable

__all__ = ["lazy_attributes"]


def lazy_attributes(package: str, where: dict[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``: attribute ``name`` is imported from its
    submodule ``where[name]`` when first read, then kept in the package's namespace."""
    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(f".{module}", package), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(where))

    return __getattr__, __dir__
