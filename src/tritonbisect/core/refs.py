"""The "package.module:attr" references of the explicit tables (recipes, workflows, hunt
targets, commands), resolved only when the object is needed.

A table names a module by string so that whoever reads the table (a Ray node rebuilding one
recipe, `tritonbisect --help`) imports nothing else, and so that lower layers can name the
domains without importing them. A reference that does not resolve is a bug in the table,
not a user error: it raises ImportError or AttributeError, and the tests resolve every entry.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any


def resolve(ref: str) -> Any:
    """The object `ref` names: "pkg.module:attr", or "pkg.module:Class.attr" for a classmethod."""
    module_name, sep, path = ref.partition(":")
    if not sep or not module_name or not path:
        raise ValueError(f"table entry {ref!r} is not of the form 'package.module:attr'")
    obj: Any = import_module(module_name)
    for name in path.split("."):
        obj = getattr(obj, name)
    return obj
