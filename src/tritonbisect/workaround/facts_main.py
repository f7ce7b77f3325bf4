#!/usr/bin/env python3
# ruff: noqa: UP031  (runs on the target's Python, which may be older than the tool's)
"""Run by the Python of a Triton under test: what this Triton lets a user switch, as JSON.

    python facts_main.py NAME [NAME ...]     # NAMEs: switches this tool knows from Triton's docs

Prints one JSON object:

    {"triton_version", "triton_dir", "fingerprint",
     "knobs_api": true when triton.knobs exists,
     "knobs": {ENV_NAME: default} of triton.knobs' compilation, nvidia and amd switches (3.4+),
     "cache_invalidating": the names (of the given ones and the knobs') this Triton's compiler
         says change a compile (get_cache_invalidating_env_vars: Triton's own list),
     "llvm_flags": the LLVM options DISABLE_LLVM_OPT may name that this libtriton holds,
     "ptxas": {"path", "blackwell", "version"}}

Standard library + the triton under test only.
"""

import hashlib
import json
import mmap
import os
import subprocess
import sys

# LLVM cl::opt switches DISABLE_LLVM_OPT can turn on, one at a time (Triton's README names
# disable-lsr: loop strength reduction moves some kernels' register pressure by up to 10%)
LLVM_FLAGS = ("disable-lsr", "disable-licm-promotion", "disable-machine-licm", "disable-machine-sink",
              "disable-early-taildup", "disable-tail-duplicate", "disable-block-placement", "disable-cgp")


def knob_defaults(knobs):
    out = {}
    for space in ("compilation", "nvidia", "amd"):
        obj = getattr(knobs, space, None)
        if obj is None:
            continue
        for klass in type(obj).__mro__:
            for attr in vars(klass).values():
                key = getattr(attr, "key", None)
                if not isinstance(key, str) or not key.isupper():
                    continue
                kind = type(attr).__name__
                if "bool" not in kind:
                    continue  # paths, strings, tools: not a switch
                default = getattr(attr, "default", None)
                if callable(default):
                    default = None
                out[key] = default if isinstance(default, bool) else None
    return out


def holds(path, names):
    found = []
    try:
        with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
            for name in names:
                if data.find(name.encode() + b"\x00") != -1:
                    found.append(name)
    except (OSError, ValueError):
        return []
    return found


def ptxas_facts(triton_dir):
    folder = os.path.join(triton_dir, "backends", "nvidia", "bin")
    out = {}
    for key, name in (("path", "ptxas"), ("blackwell", "ptxas-blackwell")):
        path = os.path.join(folder, name)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            out[key] = path
    if out.get("path"):
        try:
            text = subprocess.run([out["path"], "--version"], capture_output=True, text=True, timeout=60).stdout
            lines = [line.strip() for line in text.splitlines() if line.strip()]
            out["version"] = lines[-1] if lines else ""
        except (OSError, subprocess.SubprocessError):
            out["version"] = ""
    return out


def main(argv):
    import triton

    triton_dir = os.path.dirname(os.path.abspath(triton.__file__))
    lib = os.path.join(triton_dir, "_C", "libtriton.so")
    try:
        st = os.stat(lib)
        stamp = "%d-%d" % (st.st_size, st.st_mtime_ns)
    except OSError:
        stamp = "no-libtriton"
    version = getattr(triton, "__version__", "?")
    out = {
        "triton_version": version,
        "triton_dir": triton_dir,
        "fingerprint": hashlib.sha256(("%s|%s|%s" % (version, triton_dir, stamp)).encode()).hexdigest()[:24],
        "knobs_api": False,
        "knobs": {},
    }
    try:
        import triton.knobs as knobs

        out["knobs_api"] = True
        out["knobs"] = knob_defaults(knobs)
    except ImportError:
        pass
    names = sorted(set(argv[1:]) | set(out["knobs"]))
    try:
        from triton._C.libtriton import get_cache_invalidating_env_vars
    except ImportError:
        get_cache_invalidating_env_vars = None
    if get_cache_invalidating_env_vars is not None:
        for name in names:  # set them all: the function returns those it knows that are set
            os.environ[name] = "1"
        out["cache_invalidating"] = sorted(get_cache_invalidating_env_vars())
    else:
        out["cache_invalidating"] = None
    out["llvm_flags"] = holds(lib, LLVM_FLAGS)
    out["ptxas"] = ptxas_facts(triton_dir)
    sys.stdout.write(json.dumps(out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
