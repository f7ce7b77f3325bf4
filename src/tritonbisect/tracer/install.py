# ruff: noqa: UP031  (runs on the traced program's Python, which may be older than the tool's)
"""Installing the tracer: from sitecustomize, in every Python process the program starts.

Until the program imports triton, the only trace of the tracer is one finder at the head of
`sys.meta_path`; once `import triton` has finished, the hooks are installed, the finder
removes itself and triton's module spec gets its own loader back.
"""

import importlib.abc
import os
import sys

from . import config, hooks, interp, notes, sink

_state = globals().get("_state") or {"installed": False, "fork_handler": False}


def install_hooks():
    """Chain into an imported triton. Never raises: a failure is logged and tracing is off."""
    if _state["installed"]:
        return
    _state["installed"] = True
    try:
        hooks.install()
    except Exception as exc:
        sink.fail("install", exc)
    try:
        interp.install()
    except Exception as exc:
        sink.fail("install", exc)


def _after_fork_in_child():
    try:
        sink.after_fork_in_child()
        hooks.after_fork_in_child()
        notes.after_fork_in_child()
    except Exception as exc:
        sink.fail("install", exc)


class _Loader(importlib.abc.Loader):
    def __init__(self, inner, finder):
        self.inner = inner
        self.finder = finder

    def create_module(self, spec):
        return self.inner.create_module(spec)

    def exec_module(self, module):
        try:
            self.inner.exec_module(module)
        finally:  # leave no trace in the import system
            spec = getattr(module, "__spec__", None)
            if spec is not None and spec.loader is self:
                spec.loader = self.inner
            if getattr(module, "__loader__", None) is self:
                module.__loader__ = self.inner
            if self.finder in sys.meta_path:
                sys.meta_path.remove(self.finder)
        install_hooks()

    def __getattr__(self, name):
        return getattr(self.inner, name)


class _Watcher(importlib.abc.MetaPathFinder):
    """Installs the hooks right after `import triton` finishes."""

    def find_spec(self, name, path=None, target=None):
        if name != "triton":
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                if spec.loader is not None:
                    spec.loader = _Loader(spec.loader, self)
                return spec
        return None


def install():
    """Called by the generated sitecustomize."""
    if not config.out_dir():
        return
    notes.ensure_atexit(config.out_dir())
    if not _state["fork_handler"] and hasattr(os, "register_at_fork"):
        _state["fork_handler"] = True
        os.register_at_fork(after_in_child=_after_fork_in_child)
    triton = sys.modules.get("triton")
    if triton is not None:
        install_hooks()
    elif not any(type(f).__name__ == "_Watcher" and type(f).__module__ == __name__ for f in sys.meta_path):
        sys.meta_path.insert(0, _Watcher())


def chain_sitecustomize(own_dir, namespace):
    """Run the sitecustomize that ours shadows, if there is one, in our module's namespace
    (so `import sitecustomize` still gives the program its own). Its errors are not ours to
    catch: Python's `site` reports them as it would without the tracer."""
    own = os.path.abspath(own_dir)
    for entry in sys.path:
        if not entry or os.path.abspath(entry) == own:
            continue
        candidate = os.path.join(entry, "sitecustomize.py")
        if os.path.isfile(candidate):
            with open(candidate, "rb") as fh:
                code = compile(fh.read(), candidate, "exec")
            namespace["__file__"] = candidate
            exec(code, namespace)
            return
