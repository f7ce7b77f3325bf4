"""Shared helpers of the oracle tests: where the real traces are, and how to run the CLI."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def traces_root() -> Path | None:
    """$TRITONBISECT_TRACES, else ../shared/traces beside the repository (CI clones it there)."""
    env = os.environ.get("TRITONBISECT_TRACES")
    if env:
        return Path(env)
    for candidate in (REPO.parent / "shared" / "traces", REPO / "shared" / "traces"):
        if candidate.is_dir():
            return candidate
    return None


def scenarios() -> list[Path]:
    """Every captured scenario folder (one holding logs/)."""
    root = traces_root()
    if root is None or not root.is_dir():
        return []
    found = {p.parent for pattern in ("*/logs", "*/*/logs") for p in root.glob(pattern) if p.is_dir()}
    return sorted(found, key=lambda p: (p.name, str(p)))


def scenario(name: str) -> Path:
    for path in scenarios():
        if path.name == name:
            return path
    pytest.skip(f"shared trace {name} not found (set TRITONBISECT_TRACES or put shared/traces beside the repo)")


def tritonparse_examples() -> list[Path]:
    """Every trace file of tritonparse's own examples (shared/traces/tritonparse-examples/),
    or [] when that folder is absent."""
    root = traces_root()
    folder = root / "tritonparse-examples" if root is not None else None
    if folder is None or not folder.is_dir():
        return []
    return sorted(p for p in folder.rglob("*.ndjson*") if p.is_file())


needs_traces = pytest.mark.skipif(
    not scenarios(), reason="shared traces not found: set TRITONBISECT_TRACES or put shared/traces beside the repo"
)
has_torch_triton = importlib.util.find_spec("torch") is not None and importlib.util.find_spec("triton") is not None
needs_torch_triton = pytest.mark.skipif(not has_torch_triton, reason="torch and triton are not installed")


def cli(*args: str, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run `tritonbisect ARGS` in a subprocess (the real CLI path)."""
    return subprocess.run(
        [sys.executable, "-m", "tritonbisect.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        cwd=REPO,
    )
