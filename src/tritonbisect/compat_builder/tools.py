"""The fixer agent's tools, confined to one worktree.

read_file, list_dir, search (git grep -n), edit_file (exact, unique replacement), write_file
and finish(summary). There is no shell. A path that is absolute, contains `..`, points into
`.git`, or resolves (through symlinks) outside the worktree is refused: every problem is a
tool error result the model sees, never an exception of ours.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from tritonbisect.core.gitrun import run_git

MAX_READ_CHARS = 60_000
MAX_SEARCH_LINES = 200
MAX_LIST_ENTRIES = 500


class ToolError(Exception):
    """A problem reported to the model as an error result."""


@dataclass
class ToolResult:
    content: str
    is_error: bool = False


READ_ONLY_TOOLS = ("read_file", "list_dir", "search")
EDIT_TOOLS = ("edit_file", "write_file", "finish")

TOOL_SCHEMAS: dict[str, dict[str, Any]] = {
    "read_file": {
        "name": "read_file",
        "description": "Read a text file of the Triton worktree. Paths are relative to the "
        "worktree root. Optional 1-based start_line/end_line select a range; output lines are "
        "prefixed with their number.",
        "input_schema": {
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "start_line": {"type": "integer", "minimum": 1},
                "end_line": {"type": "integer", "minimum": 1},
            },
            "required": ["path"],
        },
    },
    "list_dir": {
        "name": "list_dir",
        "description": "List a folder of the worktree (relative path; '.' is the root). "
        "Folders end with '/'.",
        "input_schema": {
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": [],
        },
    },
    "search": {
        "name": "search",
        "description": "Search the worktree's tracked files with `git grep -n` (basic regular "
        "expression). Optional path limits the search to a file or folder.",
        "input_schema": {
            "type": "object",
            "properties": {
                "pattern": {"type": "string"},
                "path": {"type": "string"},
                "fixed_string": {"type": "boolean"},
            },
            "required": ["pattern"],
        },
    },
    "edit_file": {
        "name": "edit_file",
        "description": "Replace the exact text old_string by new_string in a file. old_string "
        "must occur exactly once (include surrounding lines to make it unique).",
        "input_schema": {
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "old_string": {"type": "string"},
                "new_string": {"type": "string"},
            },
            "required": ["path", "old_string", "new_string"],
        },
    },
    "write_file": {
        "name": "write_file",
        "description": "Create or overwrite a file of the worktree with the given content.",
        "input_schema": {
            "type": "object",
            "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
            "required": ["path", "content"],
        },
    },
    "finish": {
        "name": "finish",
        "description": "Call when the fix is complete. The summary (one line) becomes the "
        "commit message `compat fix: <summary>`; the builder then commits and builds.",
        "input_schema": {
            "type": "object",
            "properties": {"summary": {"type": "string"}},
            "required": ["summary"],
        },
    },
}


@dataclass
class Workspace:
    """Tools bound to one worktree root; records which files were changed."""

    root: Path
    changed: set[str] = field(default_factory=set)
    finished: str | None = None  # the finish summary, once called

    def __post_init__(self) -> None:
        self.root = Path(os.path.realpath(self.root))

    # --- dispatch ---------------------------------------------------------------------
    def call(self, name: str, args: Mapping[str, Any], allowed: tuple[str, ...]) -> ToolResult:
        handlers: dict[str, Callable[[Mapping[str, Any]], str]] = {
            "read_file": self.read_file,
            "list_dir": self.list_dir,
            "search": self.search,
            "edit_file": self.edit_file,
            "write_file": self.write_file,
            "finish": self.finish,
        }
        if name not in allowed or name not in handlers:
            offered = ", ".join(allowed)
            return ToolResult(f"error: tool {name!r} is not available now (offered: {offered})", True)
        if not isinstance(args, Mapping):
            return ToolResult("error: tool input must be an object", True)
        try:
            return ToolResult(handlers[name](args))
        except ToolError as exc:
            return ToolResult(f"error: {exc}", True)
        except (OSError, UnicodeError, ValueError, TypeError) as exc:
            return ToolResult(f"error: {type(exc).__name__}: {exc}", True)

    # --- path confinement -------------------------------------------------------------
    def resolve(self, raw: Any, *, must_exist: bool = True) -> Path:
        if not isinstance(raw, str) or not raw.strip():
            raise ToolError("path must be a non-empty string relative to the worktree root")
        text = raw.strip()
        if "\x00" in text:
            raise ToolError("path contains a NUL byte")
        if text.startswith(("/", "~", "\\")) or os.path.isabs(text) or (len(text) > 1 and text[1] == ":"):
            raise ToolError(f"{raw!r}: absolute paths are refused; use a path relative to the worktree root")
        parts = PurePosixPath(text.replace("\\", "/")).parts
        if ".." in parts:
            raise ToolError(f"{raw!r}: '..' is refused; paths must stay inside the worktree")
        if parts and parts[0] == ".git":
            raise ToolError(f"{raw!r}: the .git folder is off limits")
        candidate = self.root.joinpath(*parts) if parts else self.root
        real = Path(os.path.realpath(candidate))
        if real != self.root and self.root not in real.parents:
            raise ToolError(f"{raw!r} resolves outside the worktree (symlink); refused")
        if must_exist and not real.exists():
            raise ToolError(f"{raw!r} does not exist")
        return real

    def _rel(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix() or "."

    # --- tools ------------------------------------------------------------------------
    def read_file(self, args: Mapping[str, Any]) -> str:
        path = self.resolve(args.get("path"))
        if path.is_dir():
            raise ToolError(f"{args.get('path')!r} is a folder; use list_dir")
        text = path.read_text(encoding="utf-8", errors="replace")
        lines = text.splitlines()
        start = int(args.get("start_line") or 1)
        end = int(args.get("end_line") or len(lines))
        if start > max(len(lines), 1):
            raise ToolError(f"start_line {start} is past the end ({len(lines)} lines)")
        chosen = lines[start - 1 : end]
        out: list[str] = []
        size = 0
        for number, line in enumerate(chosen, start=start):
            entry = f"{number:6d}\t{line}"
            size += len(entry) + 1
            if size > MAX_READ_CHARS:
                out.append(f"... [output cut at line {number - 1} of {len(lines)}; read on with start_line={number}]")
                break
            out.append(entry)
        return "\n".join(out) if out else "(empty file)"

    def list_dir(self, args: Mapping[str, Any]) -> str:
        path = self.resolve(args.get("path") or ".")
        if not path.is_dir():
            raise ToolError(f"{args.get('path')!r} is not a folder")
        entries = []
        for child in sorted(path.iterdir(), key=lambda p: p.name):
            if child.name == ".git":
                continue
            entries.append(child.name + ("/" if child.is_dir() else ""))
        if len(entries) > MAX_LIST_ENTRIES:
            entries = entries[:MAX_LIST_ENTRIES] + [f"... ({len(entries) - MAX_LIST_ENTRIES} more)"]
        return "\n".join(entries) if entries else "(empty folder)"

    def search(self, args: Mapping[str, Any]) -> str:
        pattern = args.get("pattern")
        if not isinstance(pattern, str) or not pattern:
            raise ToolError("pattern must be a non-empty string")
        command = ["git", "grep", "-n", "-I", "--no-color"]
        if args.get("fixed_string"):
            command.append("-F")
        command += ["-e", pattern, "--"]
        if args.get("path"):
            command.append(self._rel(self.resolve(args["path"])))
        proc = run_git(command[1:], cwd=self.root, errors="replace", timeout=60)
        if proc.returncode == 1:
            return "(no matches)"
        if proc.returncode != 0:
            raise ToolError(f"search failed: {proc.stderr.strip()[:300]}")
        lines = proc.stdout.splitlines()
        if len(lines) > MAX_SEARCH_LINES:
            more = len(lines) - MAX_SEARCH_LINES
            lines = lines[:MAX_SEARCH_LINES] + [f"... ({more} more matches; narrow the pattern or path)"]
        return "\n".join(lines)

    def edit_file(self, args: Mapping[str, Any]) -> str:
        path = self.resolve(args.get("path"))
        old, new = args.get("old_string"), args.get("new_string")
        if not isinstance(old, str) or not isinstance(new, str):
            raise ToolError("old_string and new_string must be strings")
        if not old:
            raise ToolError("old_string must not be empty (use write_file to create a file)")
        if old == new:
            raise ToolError("old_string and new_string are the same: nothing would change")
        if path.is_dir():
            raise ToolError(f"{args.get('path')!r} is a folder")
        text = path.read_text(encoding="utf-8")
        count = text.count(old)
        if count == 0:
            raise ToolError(f"old_string not found in {self._rel(path)}; read the file and copy the text exactly")
        if count > 1:
            raise ToolError(
                f"old_string occurs {count} times in {self._rel(path)}; include more context so it is unique"
            )
        path.write_text(text.replace(old, new, 1), encoding="utf-8")
        self.changed.add(self._rel(path))
        return f"edited {self._rel(path)}"

    def write_file(self, args: Mapping[str, Any]) -> str:
        content = args.get("content")
        if not isinstance(content, str):
            raise ToolError("content must be a string")
        raw = args.get("path")
        path = self.resolve(raw, must_exist=False)
        if path.is_dir():
            raise ToolError(f"{raw!r} is a folder")
        # every existing ancestor was checked by resolve(); create the missing ones inside
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
        self.changed.add(self._rel(path))
        return f"wrote {self._rel(path)} ({len(content)} characters)"

    def finish(self, args: Mapping[str, Any]) -> str:
        summary = args.get("summary")
        if not isinstance(summary, str) or not summary.strip():
            raise ToolError("summary must be a non-empty one-line string")
        self.finished = " ".join(summary.split())[:200]
        return "finished; the builder will now commit and build"


def schemas(names: tuple[str, ...]) -> list[dict[str, Any]]:
    return [TOOL_SCHEMAS[name] for name in names]
