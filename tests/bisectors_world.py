"""Helpers shared by the bisector tests and benchmarks: toy compatibility maps, CLI runs."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from tritonbisect.domains.llvm.compat_map import CompatMap, CompatRow, write_map


def write_toy_map(world, path: Path, rows: Sequence[tuple[str, str]] | None = None) -> Path:
    """A commits.csv for the toy world's bump. Default rows: the bump's parent builds against
    every LLVM commit up to the one before the first API break (one row)."""
    t = world.truth
    if rows is None:
        rows = [(t["bump_parent"], t["llvm_last_compatible"][0])]
    cmap = CompatMap(
        metadata={
            "bump": t["bump"],
            "old_llvm": t["old_llvm"],
            "new_llvm": t["new_llvm"],
            "final_bad_triton_commit": t["bump"],
            "final_bad_llvm": t["new_llvm"],
            "generated_at": "2026-01-01T00:00:00+00:00",
            "tool_version": "test",
        },
        rows=[CompatRow(tr, ll) for tr, ll in rows],
    )
    write_map(path, cmap)
    return path


def run_cli(argv: list[str], capsys) -> tuple[int, str, str]:
    """Run `tritonbisect ARGV` in-process; (exit code, stdout, stderr)."""
    from tritonbisect.cli import main

    capsys.readouterr()
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def run_json(argv: list[str], capsys) -> tuple[int, dict, str]:
    code, out, err = run_cli([*argv, "--json"], capsys)
    lines = [line for line in out.splitlines() if line.startswith("{")]
    assert lines, f"no JSON result (exit {code}):\n{out}\n{err[-3000:]}"
    return code, json.loads(lines[-1]), err


def error_line(err: str) -> str:
    """The single error line the CLI printed (asserts there is exactly one)."""
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, f"expected one line, got:\n{err}"
    return lines[0]
