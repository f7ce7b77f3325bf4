"""What the fixer is told, in causal order.

1. the incompatible LLVM commit: its diff, restricted to the headers (and TableGen files)
   that Triton includes;
2. the compiler errors it causes (with their note:/candidate: lines) and the path of the full log;
3. the reference fix: how the bump commit itself changed the failing files;
4. the previous attempt's diff, when this is a retry.

Two stages: analysis (read-only tools) and then execution (edit tools and finish).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from tritonbisect.compat_builder import gitops
from tritonbisect.core.history import History

MAX_LLVM_DIFF = 40_000
MAX_ERRORS = 20_000
MAX_REFERENCE = 30_000
MAX_PREVIOUS = 20_000

_HEADER_SUFFIXES = (".h", ".hpp", ".hh", ".def", ".inc", ".td")
_INCLUDE = re.compile(r'^\s*#?\s*include\s*[<"]([^>"]+)[>"]', re.M)

SYSTEM = """\
You adapt the Triton compiler's C++ sources to an API change in LLVM/MLIR, so that Triton
builds against a given LLVM commit. You work only through the tools offered; paths are
relative to the Triton worktree root. There is no shell: you cannot build or run anything.
After you finish, the builder commits your changes and builds Triton against that LLVM commit;
if the build fails you get its errors in the next attempt.
Rules: make the smallest change that fixes the errors; keep Triton's behaviour; do not touch
the LLVM pin (cmake/llvm-hash.txt, cmake/llvm-info.json: the builder writes it), tests, or
anything outside what the errors require; do not add
compatibility shims for older LLVM versions."""

ANALYSIS_TASK = """\
# Task, stage 1 of 2: analysis
Read the material above and the Triton sources it points to (read_file, list_dir, search).
Do not edit anything yet: the edit tools come in stage 2. End this stage with a short plan:
which LLVM API changed, which Triton files and lines must change, and how."""

EXECUTION_TASK = """\
# Stage 2 of 2: execution
Now carry out your plan with edit_file (exact, unique replacements) or write_file. When every
error above is addressed, call finish with a one-line summary of the change (it becomes the
commit message `compat fix: <summary>`)."""


@dataclass(frozen=True)
class FixPrompt:
    system: str
    analysis: str  # first user message (material + analysis task)
    execution: str  # second user message


@dataclass
class FixContext:
    llvm_commit: str
    llvm_subject: str
    llvm_diff: str  # already restricted
    llvm_diff_note: str
    triton_commit: str  # the commit being fixed (attempts start from it)
    errors: str
    log_path: str
    reference_fix: str
    reference_note: str
    previous_diff: str | None = None
    previous_attempt: int | None = None
    attempt: int = 1


def _cap(text: str, limit: int, where: str) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n... [cut at {limit} characters; the whole text: {where}]\n"


def render(ctx: FixContext) -> FixPrompt:
    parts = [
        f"# Attempt {ctx.attempt}: make Triton {ctx.triton_commit[:12]} build against LLVM "
        f"{ctx.llvm_commit[:12]} (\"{ctx.llvm_subject}\")",
        "",
        "## 1. The LLVM change",
        ctx.llvm_diff_note,
        "```diff",
        _cap(ctx.llvm_diff, MAX_LLVM_DIFF, f"git show {ctx.llvm_commit} in the LLVM repository").rstrip(),
        "```",
        "",
        "## 2. The errors it causes in Triton",
        f"Extracted from the full build log at {ctx.log_path}:",
        "```",
        _cap(ctx.errors, MAX_ERRORS, ctx.log_path).rstrip() or "(no compiler error lines found)",
        "```",
        "",
        "## 3. Reference fix",
        ctx.reference_note,
    ]
    if ctx.reference_fix:
        parts += ["```diff", _cap(ctx.reference_fix, MAX_REFERENCE, "the bump commit").rstrip(), "```"]
    if ctx.previous_diff is not None:
        parts += [
            "",
            f"## 4. Previous attempt ({ctx.previous_attempt}) and why it failed",
            "Its changes are in the worktree now (build on them or undo them); the errors in "
            "section 2 come from building it:",
            "```diff",
            _cap(ctx.previous_diff, MAX_PREVIOUS, "the previous attempt's diff file").rstrip()
            or "(the previous attempt changed nothing)",
            "```",
        ]
    material = "\n".join(parts)
    return FixPrompt(system=SYSTEM, analysis=material + "\n\n" + ANALYSIS_TASK, execution=EXECUTION_TASK)


# --- gathering the material ---------------------------------------------------------------
def triton_includes(worktree: Path) -> set[str]:
    """Every path Triton's sources include (#include "x" / <x>, and TableGen `include "x"`)."""
    out = gitops.git(
        worktree, "grep", "-h", "-I", "-E", r'^\s*#?\s*include\s*[<"]', "--", ".", check=False
    )
    return {m.group(1).strip() for m in _INCLUDE.finditer(out)}


def llvm_header_diff(llvm: History, commit: str, includes: set[str]) -> tuple[str, str]:
    """The commit's diff of headers Triton includes; falls back to all headers it changed."""
    parents = llvm.parents(commit)
    if not parents:
        return "", "This is the first LLVM commit: there is no diff."
    files = llvm.files_touched(commit)
    headers = [f for f in files if f.endswith(_HEADER_SUFFIXES)]
    included = [f for f in headers if any(f == inc or f.endswith("/" + inc) for inc in includes)]
    if included:
        note = f"Diff of the {len(included)} header(s) this commit changed that Triton includes:"
        chosen = included
    elif headers:
        note = "This commit changed no header that Triton includes directly; all headers it changed:"
        chosen = headers
    else:
        note = "This commit changed no header; its whole diff:"
        chosen = files
    return gitops.diff(llvm.root, parents[0], commit, chosen), note


_ERROR_START = re.compile(r"(?:\berror\b|\bError\b|undefined reference|undefined symbol)[:\s]")
_COMPILER_LINE = re.compile(
    r"^(?P<file>[^\s:][^:]*):(?P<line>\d+)(?::\d+)?:\s*(?P<kind>fatal error|error|note|warning)"
)
_CONTEXT = re.compile(
    r"(?:\bnote:|\bcandidate|candidates are|required from|In instantiation of|"
    r"In file included from|^\s+from\s|^\s*\d*\s*\||^\s+\^)"
)


def extract_errors(log_text: str, strip_prefixes=(), *, max_chars: int = MAX_ERRORS) -> str:
    """Compiler errors with their context lines (note:, candidate:, the code and caret lines).

    Paths under `strip_prefixes` (the probe's source folder) become worktree-relative. When
    the log holds compiler diagnostics (file:line: error), only those are kept; otherwise
    any error line (a linker, an import); with no error line at all, the log's last lines.
    """
    text = log_text
    for prefix in strip_prefixes:
        if prefix:
            text = text.replace(prefix.rstrip("/") + "/", "")
    lines = text.splitlines()
    compiler = any(
        (m := _COMPILER_LINE.match(line.strip())) and "error" in m.group("kind") for line in lines
    )
    blocks: list[str] = []
    seen: set[str] = set()
    i = 0
    while i < len(lines):
        line = lines[i]
        match = _COMPILER_LINE.match(line.strip())
        if compiler:
            is_error = match is not None and "error" in match.group("kind")
        else:
            is_error = bool(_ERROR_START.search(line)) and "warning:" not in line
        if not is_error:
            i += 1
            continue
        block = [line]
        # "In file included from" lines just before belong to it
        j = i - 1
        while j >= 0 and ("In file included from" in lines[j] or lines[j].lstrip().startswith("from ")):
            block.insert(0, lines[j])
            j -= 1
        i += 1
        while i < len(lines) and _CONTEXT.search(lines[i]) and not _is_error_line(lines[i]):
            block.append(lines[i])
            i += 1
        key = "\n".join(block)
        if key not in seen:
            seen.add(key)
            blocks.append(key)
    if not blocks:  # no error line: the end of the log is the best evidence
        return "\n".join(lines[-40:])
    out = ""
    for n, text in enumerate(blocks):
        if len(out) + len(text) > max_chars:
            out += f"\n... ({len(blocks) - n} more error(s) in the full log)\n"
            break
        out += text + "\n"
    return out


def _is_error_line(line: str) -> bool:
    match = _COMPILER_LINE.match(line.strip())
    return match is not None and "error" in match.group("kind")


def failing_files(errors: str, worktree: Path | None = None) -> list[str]:
    """Source paths named in compiler error lines, relative to the worktree root.

    Builds often run in a subfolder (Triton's python/), so a path that is not found from the
    root is matched against the tracked files that end with it, when exactly one does.
    """
    named: list[str] = []
    for line in errors.splitlines():
        match = _COMPILER_LINE.match(line.strip())
        if (match and "error" in match.group("kind") and not match.group("file").startswith("/")
                and match.group("file") not in named):
            named.append(match.group("file"))
    if worktree is None or not named:
        return named
    tracked = gitops.git(worktree, "ls-files").splitlines()
    found: list[str] = []
    for path in named:
        clean = path[2:] if path.startswith("./") else path
        if clean in tracked:
            choice = clean
        else:
            ends = [t for t in tracked if t.endswith("/" + clean)]
            choice = ends[0] if len(ends) == 1 else clean
        if choice not in found:
            found.append(choice)
    return found


def reference_fix(triton_repo: Path, bump: str | None, files: list[str]) -> tuple[str, str]:
    """How the bump commit changed the failing files."""
    if not bump:
        return "", "No bump commit is known for this fix, so there is no reference fix."
    parent = f"{bump}^"
    if not files:
        return "", f"No failing file could be named from the errors; the bump commit is {bump[:12]}."
    text = gitops.diff(triton_repo, parent, bump, files)
    if not text.strip():
        return "", (
            f"The bump commit {bump[:12]} did not change the failing files "
            f"({', '.join(files[:5])}); no reference fix for them."
        )
    return text, (
        f"The bump commit {bump[:12]} (which moved Triton to a newer LLVM) changed the failing "
        "files like this. It also adapts to later LLVM changes, so take only the part that "
        "answers the errors above:"
    )
