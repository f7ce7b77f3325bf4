"""--prefer-pass / --prefer-files: the files a hint names, and the commits of a range touching them.

Reads git with plumbing only (ls-tree, grep -l -z, cat-file, rev-list through core.gitrun); what
counts as a pass's sources is decided in the pure search/prior.py.

    hint = find_hint(repo, good, bad, passes=["TritonGPUCoalesce"], globs=[])
    hint.files, hint.commits, hint.lines()        # what to print
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tritonbisect.core.errors import InputError
from tritonbisect.search import prior

_CODE = ["*.cpp", "*.cc", "*.cxx", "*.c", "*.h", "*.hpp"]


@dataclass
class PassFiles:
    query: str  # as the user gave it
    name: str = ""  # TableGen name at the commit used
    arg: str = ""
    td: str = ""
    files: list[str] = field(default_factory=list)
    at: str = "bad"  # the endpoint whose tree gave the files
    note: str = ""  # added / removed / renamed between the endpoints


@dataclass
class Hint:
    passes: list[PassFiles]
    globs: dict[str, list[str]]
    files: list[str]  # union, sorted
    commits: list[str]  # commits of good..bad touching them (rev-list order: newest first)
    range_size: int = 0

    @property
    def empty(self) -> bool:
        return not self.commits

    def describe(self) -> str:
        """One line: what the hint is."""
        parts = [f"--prefer-pass {p.query}" for p in self.passes] + [f"--prefer-files {g}" for g in self.globs]
        return " ".join(parts)

    def lines(self) -> list[str]:
        """What the hint weighs, for the user: files and commits."""
        out = []
        for p in self.passes:
            if not p.files:
                out.append(f"--prefer-pass {p.query}: {p.note}")
                continue
            shown = ", ".join(p.files[:6]) + (f", ... ({len(p.files)} files)" if len(p.files) > 6 else "")
            out.append(f"--prefer-pass {p.query}: {p.name} ({p.arg}) from {p.td}: {shown}"
                       + (f"; {p.note}" if p.note else ""))
        for g, hits in self.globs.items():
            shown = ", ".join(hits[:6]) + (f", ... ({len(hits)} files)" if len(hits) > 6 else "")
            out.append(f"--prefer-files {g}: {shown or 'no file at the bad commit'}")
        if self.commits:
            weight = (f", each {prior.hint_ratio(self.range_size, len(self.commits)):.0f}x a commit elsewhere"
                      if self.range_size else "")
            total = self.range_size or "the"
            out.append(f"the hint weighs {len(self.commits)} of {total} commits (they touch {len(self.files)} "
                       f"files){weight}; a wrong hint costs about {prior.WRONG_HINT_BITS:g} more builds on average")
        else:
            out.append("no commit of the range touches the hinted files: searching without the hint")
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "passes": [asdict(p) for p in self.passes],
            "globs": self.globs,
            "files": self.files,
            "commits": len(self.commits),
            "range_size": self.range_size,
            "ratio": prior.hint_ratio(self.range_size, len(self.commits)) if self.range_size else None,
            "described": self.describe(),
        }


class _Git:
    def __init__(self, repo: Path) -> None:
        self.repo = Path(repo)
        self._tree: dict[str, list[str]] = {}

    def run(self, *args: str, ok: tuple[int, ...] = (0,)) -> str:
        from tritonbisect.core.gitrun import run_git

        proc = run_git(args, cwd=self.repo, errors="replace")
        if proc.returncode not in ok:
            raise InputError(f"git {' '.join(args[:2])} failed in {self.repo}: {proc.stderr.strip()[-200:]}")
        return proc.stdout if proc.returncode == 0 else ""

    def tree(self, commit: str) -> list[str]:
        if commit not in self._tree:
            out = self.run("ls-tree", "-r", "-z", "--name-only", "--full-tree", commit)
            self._tree[commit] = [p for p in out.split("\0") if p]
        return self._tree[commit]

    def grep_files(self, commit: str, strings: Sequence[str], pathspecs: Sequence[str]) -> list[str]:
        args = ["-l", "-z", "-F", "-I"]
        for s in strings:
            args += ["-e", s]
        out = self.run("grep", *args, commit, "--", *pathspecs, ok=(0, 1))  # 1: no match
        prefix = f"{commit}:"
        return sorted(p[len(prefix):] if p.startswith(prefix) else p for p in out.split("\0") if p)

    def read(self, commit: str, path: str) -> str:
        return self.run("cat-file", "blob", f"{commit}:{path}")

    def touching(self, good: str, bad: str, paths: Sequence[str], first_parent: bool) -> list[str]:
        if not paths:
            return []
        args = ["--first-parent"] if first_parent else []
        out = self.run("rev-list", *args, bad, f"^{good}", "--", *paths)
        return [line for line in out.split() if line]


def _declarations(g: _Git, commit: str) -> list[prior.PassDecl]:
    tds = g.grep_files(commit, ["Pass<"], ["*.td"])
    return prior.declared_passes({p: g.read(commit, p) for p in tds})


def _pass_files(g: _Git, commit: str, decl: prior.PassDecl) -> list[str]:
    found = g.grep_files(commit, prior.implementation_markers(decl.name), _CODE)
    impl = [p for p in found if not p.endswith(".inc") and prior.implements(decl.name, g.read(commit, p))]
    files = {decl.td, *impl}
    if decl.conversion and impl:
        files.update(prior.conversion_files(impl, g.tree(commit)))
    return sorted(files)


def pass_files(g: _Git, good: str, bad: str, query: str, decls_bad: list[prior.PassDecl],
               decls_good: list[prior.PassDecl]) -> PassFiles:
    """The files of one --prefer-pass at the bad commit, and whether the endpoints share it."""
    out = PassFiles(query=query)
    at_bad = prior.find_pass(query, decls_bad)
    at_good = prior.find_pass(query, decls_good)
    use = at_bad
    if not at_bad and at_good:
        use = at_good
        out.at = "good"
        out.note = (f"{at_good[0].name} is not declared at the bad commit (removed or renamed between the "
                    "endpoints): using its files at the good commit")
    elif at_bad and not at_good:
        # renamed: the other endpoint has the argument under another name, or the name under another argument
        same = [d for d in decls_good if d.arg == at_bad[0].arg or d.name == at_bad[0].name]
        if same:
            out.note = (f"renamed between the endpoints (at the good commit: {same[0].name} ({same[0].arg})); "
                        "using its files at the bad commit")
        else:
            out.note = (f"{at_bad[0].name} is not declared at the good commit (added between the endpoints): "
                        "using its files at the bad commit")
    if not use:
        out.note = "no Passes.td declares it at either endpoint"
        return out
    decl = use[0]
    out.name, out.arg, out.td = decl.name, decl.arg, decl.td
    files: set[str] = set()
    for d in use:
        files.update(_pass_files(g, good if out.at == "good" else bad, d))
    out.files = sorted(files)
    return out


def find_hint(repo: Path, good: str, bad: str, *, passes: Sequence[str], globs: Sequence[str],
              first_parent: bool = False, range_size: int = 0) -> Hint:
    """The hint's files (passes at the bad commit, globs in its tree) and the commits of
    good..bad touching them. InputError when a name matches nothing at all."""
    g = _Git(repo)
    found: list[PassFiles] = []
    if passes:
        decls_bad = _declarations(g, bad)
        decls_good = _declarations(g, good)
        for query in passes:
            pf = pass_files(g, good, bad, query, decls_bad, decls_good)
            if not pf.files:
                names = sorted({d.name for d in decls_bad})
                known = (f"; passes declared there include {', '.join(names[:5])}" if names
                         else "; no Passes.td there declares any pass")
                raise InputError(f"--prefer-pass {query}: no Passes.td of {repo} declares it at "
                                 f"{bad[:12]} or {good[:12]}{known} (narrow prints the pass's name)")
            found.append(pf)
    hits = prior.glob_files(globs, g.tree(bad)) if globs else {}
    for pat, matched in hits.items():
        if not matched:
            raise InputError(f"--prefer-files {pat}: matches no file of {repo} at {bad[:12]} "
                             "(a glob from the repository's root, e.g. 'lib/Dialect/TritonGPU/**')")
    files = sorted({f for p in found for f in p.files} | {f for m in hits.values() for f in m})
    commits = g.touching(good, bad, files, first_parent)
    return Hint(passes=found, globs=hits, files=files, commits=commits, range_size=range_size)
