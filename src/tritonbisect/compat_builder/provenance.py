"""Where a fix came from: the `compat fix:` commit message, the files it touched, and the
build scripts among them (flagged for review: their code runs wherever the commit is built).

Pure logic: callers give the file lists (from git) and write the results."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

# Files whose content is code the build runs (not code the build compiles).
_BUILD_SCRIPT = re.compile(
    r"(^|/)(setup\.py|setup\.cfg|pyproject\.toml|CMakeLists\.txt|Makefile|MANIFEST\.in|"
    r"[^/]+\.cmake(\.in)?|[^/]+\.mk|[^/]+\.pth|sitecustomize\.py|conftest\.py)$|^cmake/"
)


def build_scripts(files: Iterable[str]) -> list[str]:
    """The files of `files` that the build runs: setup.py, pyproject.toml, CMake files..."""
    return [f for f in files if _BUILD_SCRIPT.search(f)]


def model_name(ai: str, model: str, default: str) -> str:
    """'anthropic/claude-...' for the state's --ai and --ai-model."""
    return f"{ai}/{model or default}"


def commit_message(summary: str, *, model: str, llvm: str, files: Sequence[str]) -> str:
    """The builder's commit message for a model's fix: subject, a line saying a model wrote
    it, and git trailers (AI-Model, LLVM-Commit, Review-Build-Scripts when it touched any)."""
    scripts = build_scripts(files)
    body = [f"compat fix: {summary}", "",
            f"Written by a model ({model}) for tritonbisect compat-builder; not reviewed by a person."]
    if scripts:
        body.append("It changes build scripts, which run wherever this commit is built: review them first.")
    body += ["", f"AI-Model: {model}", f"LLVM-Commit: {llvm}"]
    if scripts:
        body.append(f"Review-Build-Scripts: {', '.join(scripts)}")
    return "\n".join(body) + "\n"


def needs_review_value(fixes: Sequence[Mapping]) -> str:
    """commits.csv's `needs_review` metadata: `<commit>:<file>|<file>` for each fix that
    changed build scripts, joined by ';' ("" when none did)."""
    parts = [f"{f['commit']}:{'|'.join(f['build_scripts'])}" for f in fixes if f.get("build_scripts")]
    return ";".join(parts)


def parse_needs_review(value: str) -> dict[str, list[str]]:
    """{commit: [build scripts]} from a `needs_review` metadata value."""
    out: dict[str, list[str]] = {}
    for part in filter(None, (p.strip() for p in value.split(";"))):
        commit, _, files = part.partition(":")
        out[commit] = [f for f in files.split("|") if f]
    return out


def report(fixes: Sequence[Mapping]) -> str:
    """The fixes of a session, one block each: who made it, the files it touched, and a
    REVIEW line for build scripts."""
    lines = []
    for i, fix in enumerate(fixes, 1):
        who = f"model {fix['model']}" if fix.get("model") else "by hand"
        lines.append(f"fix {i}: {fix['commit'][:12]} for LLVM {str(fix.get('llvm') or '')[:12]} ({who})")
        files = fix.get("files") or []
        lines.append(f"  files: {', '.join(files) if files else '(none recorded)'}")
        if fix.get("build_scripts"):
            lines.append(f"  REVIEW: changes build scripts ({', '.join(fix['build_scripts'])}): "
                         "their code runs wherever this commit is built")
    return "\n".join(lines)
