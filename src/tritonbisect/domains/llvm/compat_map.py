"""commits.csv: the Triton<->LLVM compatibility map of one LLVM bump.

Format::

    # schema_version=1
    # bump=<triton sha>
    # old_llvm=<llvm sha>
    # new_llvm=<llvm sha>
    # final_bad_triton_commit=<triton sha>
    # final_bad_llvm=<llvm sha>
    # generated_at=<ISO 8601>
    # tool_version=<version>
    # needs_review=<triton sha>:<file>|<file>;...     (optional: fixes that changed build scripts)
    triton_commit,llvm_commit_last_compatible
    <triton sha>,<llvm sha>          (rows in LLVM order)

Row i's Triton commit builds against every LLVM commit after row i-1's LLVM commit (from
old_llvm for row 1) up to and including its own; LLVM commits after the last row use
`final_bad_triton_commit` (the bump commit, which builds against new_llvm).

Other `# key=value` lines before the header are kept as metadata; readers ignore the keys
they do not know, so files with or without `needs_review` load everywhere.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tritonbisect.core.errors import InputError
from tritonbisect.core.files import atomic_write_text

SCHEMA_VERSION = 1
HEADER = "triton_commit,llvm_commit_last_compatible"
METADATA_KEYS = (
    "bump",
    "old_llvm",
    "new_llvm",
    "final_bad_triton_commit",
    "final_bad_llvm",
    "generated_at",
    "tool_version",
)
SHA_KEYS = ("bump", "old_llvm", "new_llvm", "final_bad_triton_commit", "final_bad_llvm")
_SHA = re.compile(r"^[0-9a-f]{40}$")


def is_sha(text: str) -> bool:
    return bool(_SHA.match(text))


@dataclass(frozen=True)
class CompatRow:
    triton_commit: str
    llvm_commit_last_compatible: str
    line: int = 0  # line number in the file it was read from (0 when built in memory)


@dataclass
class CompatMap:
    metadata: dict[str, str]
    rows: list[CompatRow] = field(default_factory=list)

    def triton_for_llvm(self, llvm_commit: str, llvm_order: Sequence[str]) -> str:
        """The Triton commit that builds against `llvm_commit`.

        `llvm_order` lists LLVM commits oldest first and must contain `llvm_commit` and every
        row's LLVM commit. Commits up to the last row map to the first row at or after them;
        later ones to `final_bad_triton_commit`.
        """
        index = {sha: i for i, sha in enumerate(llvm_order)}
        if llvm_commit not in index:
            raise InputError(f"LLVM commit {llvm_commit[:12]} is not in the LLVM range of this map")
        position = index[llvm_commit]
        for row in self.rows:
            row_pos = index.get(row.llvm_commit_last_compatible)
            if row_pos is None:
                where = f"line {row.line}: " if row.line else ""
                raise InputError(
                    f"{where}LLVM commit {row.llvm_commit_last_compatible[:12]} of the map is "
                    "not in the given LLVM order"
                )
            if position <= row_pos:
                return row.triton_commit
        return self.metadata["final_bad_triton_commit"]


def read_map(path: Path) -> CompatMap:
    """Parse and validate a commits.csv; every problem is an InputError naming file:line."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read: {exc}") from None
    lines = text.splitlines()

    def fail(lineno: int, what: str) -> InputError:
        return InputError(f"{path}:{lineno}: {what}")

    if not lines:
        raise fail(1, "empty file; expected '# schema_version=1'")
    first = lines[0].strip()
    match = re.fullmatch(r"#\s*schema_version\s*=\s*(\S+)", first)
    if not match:
        raise fail(1, f"expected '# schema_version={SCHEMA_VERSION}', found {first[:60]!r}")
    if match.group(1) != str(SCHEMA_VERSION):
        raise fail(1, f"unsupported schema_version {match.group(1)!r} (this tool reads {SCHEMA_VERSION})")

    metadata: dict[str, str] = {}
    rows: list[CompatRow] = []
    header_line = 0
    seen_llvm: dict[str, int] = {}
    for lineno, raw in enumerate(lines[1:], start=2):
        line = raw.strip()
        if not line:
            continue
        if not header_line:
            if line.startswith("#"):
                body = line[1:].strip()
                if "=" not in body:
                    raise fail(lineno, f"metadata line must be '# key=value', found {line[:60]!r}")
                key, value = (part.strip() for part in body.split("=", 1))
                if key in metadata:
                    raise fail(lineno, f"metadata key {key!r} given twice")
                if key in SHA_KEYS and not is_sha(value):
                    raise fail(lineno, f"{key} must be a 40-hex commit sha, found {value[:60]!r}")
                metadata[key] = value
                continue
            if line.replace(" ", "") != HEADER:
                raise fail(lineno, f"expected the header {HEADER!r}, found {line[:60]!r}")
            missing = [k for k in METADATA_KEYS if k not in metadata]
            if missing:
                raise fail(lineno, f"metadata key(s) missing before the header: {', '.join(missing)}")
            header_line = lineno
            continue
        if line.startswith("#"):
            raise fail(lineno, "comment lines are only allowed before the header")
        cells = [cell.strip() for cell in line.split(",")]
        if len(cells) != 2:
            raise fail(lineno, f"expected 2 columns (triton_commit,llvm_commit_last_compatible), found {len(cells)}")
        triton, llvm = cells
        if not is_sha(triton):
            raise fail(lineno, f"triton_commit must be a 40-hex commit sha, found {triton[:60]!r}")
        if not is_sha(llvm):
            raise fail(lineno, f"llvm_commit_last_compatible must be a 40-hex commit sha, found {llvm[:60]!r}")
        if llvm in seen_llvm:
            raise fail(lineno, f"LLVM commit {llvm[:12]} already used on line {seen_llvm[llvm]}")
        seen_llvm[llvm] = lineno
        rows.append(CompatRow(triton, llvm, lineno))
    if not header_line:
        raise fail(len(lines), f"header {HEADER!r} not found")
    return CompatMap(metadata=metadata, rows=rows)


def render_map(cmap: CompatMap) -> str:
    missing = [k for k in METADATA_KEYS if k not in cmap.metadata]
    if missing:
        raise ValueError(f"compat map lacks metadata: {', '.join(missing)}")
    out = [f"# schema_version={SCHEMA_VERSION}"]
    keys = list(METADATA_KEYS) + sorted(k for k in cmap.metadata if k not in METADATA_KEYS)
    out += [f"# {key}={cmap.metadata[key]}" for key in keys]
    out.append(HEADER)
    out += [f"{row.triton_commit},{row.llvm_commit_last_compatible}" for row in cmap.rows]
    return "\n".join(out) + "\n"


def write_map(path: Path, cmap: CompatMap) -> None:
    """Write atomically: temp file in the same folder, fsync, rename."""
    atomic_write_text(Path(path), render_map(cmap))


def order_problems(cmap: CompatMap, path: Path, llvm_order: Sequence[str]) -> list[str]:
    """Problems with the rows' LLVM commits against the LLVM order old_llvm..new_llvm."""
    problems: list[str] = []
    index = {sha: i for i, sha in enumerate(llvm_order)}
    last = -1
    last_line = 0
    for key in ("old_llvm", "new_llvm", "final_bad_llvm"):
        if cmap.metadata[key] not in index:
            problems.append(f"{path}: metadata {key}={cmap.metadata[key][:12]} is not in the LLVM range")
    for row in cmap.rows:
        pos = index.get(row.llvm_commit_last_compatible)
        if pos is None:
            problems.append(
                f"{path}:{row.line}: LLVM commit {row.llvm_commit_last_compatible[:12]} is not "
                "between old_llvm and new_llvm"
            )
            continue
        if pos <= last:
            problems.append(
                f"{path}:{row.line}: rows out of LLVM order: {row.llvm_commit_last_compatible[:12]} "
                f"is not after the LLVM commit of line {last_line}"
            )
        last, last_line = max(last, pos), row.line
    return problems
