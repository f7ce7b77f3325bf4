"""Facts about the build toolchain that go into cache keys, and the tools a build needs."""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

COMPILERS = {"gcc": ("gcc", "g++"), "clang": ("clang", "clang++")}


@functools.lru_cache(maxsize=32)
def _version_line(exe: str) -> str:
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return ""
    lines = (out.stdout or out.stderr).strip().splitlines()
    return lines[0].strip() if lines else ""


def compiler_id(cxx: str | None = None, env: Mapping[str, str] | None = None) -> str:
    """'g++ (Debian 12.2.0-14) 12.2.0' for the C++ compiler a build will use: part of keys."""
    env = os.environ if env is None else env
    exe = cxx or env.get("CXX") or "c++"
    path = shutil.which(exe, path=env.get("PATH"))
    if path is None:
        return f"{exe} (missing)"
    return _version_line(path) or Path(path).name


def which(tool: str, env: Mapping[str, str] | None = None) -> str | None:
    env = os.environ if env is None else env
    return shutil.which(tool, path=env.get("PATH"))


def missing_tools(tools: list[str], env: Mapping[str, str] | None = None) -> list[str]:
    return [t for t in tools if which(t, env) is None]


def build_requires(project: Path) -> list[str]:
    """[build-system].requires of project/pyproject.toml; setuptools+wheel when absent
    (what pip assumes for a setup.py project; old setuptools also needs wheel, which the
    caller checks). Needed because builds run without isolation."""
    default = ["setuptools>=40.8.0"]
    pyproject = Path(project) / "pyproject.toml"
    if not pyproject.is_file():
        return default
    text = pyproject.read_text(encoding="utf-8", errors="replace")
    try:
        import tomllib

        data = tomllib.loads(text)
        reqs = data.get("build-system", {}).get("requires")
    except ModuleNotFoundError:  # Python 3.10: a small reader is enough for this table
        m = re.search(r"^\[build-system\](.*?)(?=^\[|\Z)", text, re.S | re.M)
        reqs = None
        if m:
            r = re.search(r"requires\s*=\s*\[(.*?)\]", m.group(1), re.S)
            if r:
                reqs = re.findall(r"[\"']([^\"']+)[\"']", r.group(1))
    except ValueError:
        return default
    if not isinstance(reqs, list):
        return default
    return [str(r) for r in reqs]


def ccache_dir(env: Mapping[str, str] | None = None) -> Path | None:
    """The folder ccache keeps its cache in for `env` (CCACHE_DIR, else what `ccache` says);
    None without ccache. A sandboxed build gets it bound in read-write, so it still hits."""
    env = os.environ if env is None else env
    if env.get("CCACHE_DIR"):
        return Path(env["CCACHE_DIR"])
    exe = which("ccache", env)
    return _ccache_default(exe, env.get("HOME", "")) if exe else None


@functools.lru_cache(maxsize=8)
def _ccache_default(exe: str, home: str) -> Path | None:
    try:
        out = subprocess.run([exe, "--get-config", "cache_dir"], capture_output=True, text=True, timeout=60,
                             env={**os.environ, "HOME": home} if home else None)
    except (OSError, subprocess.SubprocessError):
        return None
    text = out.stdout.strip()
    return Path(text) if out.returncode == 0 and text.startswith("/") else None
