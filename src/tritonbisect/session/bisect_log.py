"""`git bisect log` form: a session's verdicts written as one, and one read into verdicts.

Pure text in, text out. `render` writes one line per commit with its verdict as the session
stands (a person's mark first; the one verdict of a commit tested once or always alike; else,
for a flaky test, what the posterior says), so that `git bisect replay` reaches the same
culprit. `parse` reads what `git bisect log` prints, custom terms and all.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tritonbisect.session.evidence import evidence_of


class BisectLogError(ValueError):
    """The text is not a git bisect log we can use (message: what and where)."""


# --- writing --------------------------------------------------------------------------------


def render(
    *,
    session_id: str,
    phase: str,
    repo: str,
    good: str,
    bad: str,
    records: Iterable[Mapping[str, Any]],
    subject: Callable[[str], str],
    first_parent: bool = False,
    p_bad: Callable[[str], float] | None = None,
    status: str | None = None,
    culprit: str | None = None,
    candidates: Iterable[str] = (),
) -> str:
    """The verdicts of one phase as `git bisect log` would print them, plus comments.

    `p_bad(commit)`: the posterior probability that the commit is bad, used for the commits
    whose test verdicts disagree (None: the majority is used)."""
    records = list(records)
    ev = evidence_of(records)
    out = [f"# tritonbisect session {session_id}, phase {phase}: {repo}"]
    if status:
        out.append(f"# status: {status}")
    out.append("git bisect start" + (" '--first-parent'" if first_parent else ""))
    out += _entry("bad", bad, subject, [])
    out += _entry("good", good, subject, [])
    order: list[str] = []
    for rec in records:
        commit = rec.get("commit")
        if commit and commit not in (good, bad) and commit not in order:
            order.append(str(commit))
    for commit in order:
        verdict, notes = _verdict(commit, ev, records, p_bad)
        if verdict is not None:
            out += _entry(verdict, commit, subject, notes)
    if status == "found" and culprit:
        out.append(f"# first bad commit: [{culprit}] {subject(culprit)}")
    elif status == "inconclusive":
        for commit in candidates:
            out.append(f"# possible first bad commit: [{commit}] {subject(commit)}")
    return "\n".join(out) + "\n"


def _entry(verdict: str, commit: str, subject: Callable[[str], str], notes: list[str]) -> list[str]:
    return [*(f"# {n}" for n in notes), f"# {verdict}: [{commit}] {subject(commit)}",
            f"git bisect {verdict} {commit}"]


def _verdict(commit: str, ev: Any, records: list[Mapping[str, Any]],
             p_bad: Callable[[str], float] | None) -> tuple[str | None, list[str]]:
    notes: list[str] = []
    g, b = ev.counts.get(commit, (0, 0))
    if commit in ev.marks:
        why = next((str(r.get("reason")) for r in reversed(records)
                    if r.get("role") == "mark" and r.get("commit") == commit
                    and int(r.get("seq") or 0) not in ev.undone), "")
        tested = f" (tests said: {g} good, {b} bad)" if g or b else ""
        notes.append(f"marked {ev.marks[commit]} by hand{tested}: {why}".rstrip(": "))
        return ev.marks[commit], notes
    if g and b:
        if p_bad is not None:
            pb = p_bad(commit)
            notes.append(f"flaky: {g} good, {b} bad verdicts; P(bad) = {pb:.3f}")
            return ("bad" if pb > 0.5 else "good"), notes
        notes.append(f"flaky: {g} good, {b} bad verdicts; the majority is kept")
        return ev.verdict(commit), notes
    if g or b:
        if g + b > 1:
            notes.append(f"{g + b} runs agree")
        return ("good" if g else "bad"), notes
    if commit in ev.skipped:
        return "skip", notes
    return None, notes


# --- reading --------------------------------------------------------------------------------


@dataclass
class BisectLog:
    """What a git bisect log says. `verdicts`: (line number, verdict, rev) in order; the first
    good and the first bad are the range, every later one a verdict inside it."""

    good: list[tuple[int, str]] = field(default_factory=list)  # (line, rev)
    bad: list[tuple[int, str]] = field(default_factory=list)
    verdicts: list[tuple[int, str, str]] = field(default_factory=list)
    first_parent: bool = False
    terms: tuple[str, str] = ("good", "bad")


_IGNORED = {"log", "visualize", "view", "reset", "next", "terms", "help", "run", "replay"}


def parse(text: str) -> BisectLog:
    """Read a git bisect log (BisectLogError with the line when it is not one)."""
    log = BisectLog()
    pending: list[tuple[str, str]] = []  # (term, sha) from "# term: [sha]" before start
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line:
            continue
        if line.startswith("#"):
            body = line[1:].strip()
            term, sep, rest = body.partition(": [")
            if sep and "]" in rest and " " not in term:
                pending.append((term, rest.split("]", 1)[0]))
            continue
        try:
            words = shlex.split(line)
        except ValueError as exc:
            raise BisectLogError(f"line {number}: {exc}") from None
        if words[:2] != ["git", "bisect"] or len(words) < 3:
            raise BisectLogError(f"line {number} is not a `git bisect` command: {line[:80]}")
        command, args = words[2], words[3:]
        if command == "start":
            log = _start(args, number, pending)
        elif command in _IGNORED:
            pass
        else:
            verdict = _as_verdict(command, log.terms)
            if verdict is None:
                raise BisectLogError(f"line {number}: unknown bisect command {command!r}")
            if not args:
                raise BisectLogError(f"line {number}: `git bisect {command}` names no commit")
            for rev in args:
                log.verdicts.append((number, verdict, rev))
        if command != "start":
            pending = []
    if not (log.good or log.bad or log.verdicts):
        raise BisectLogError("no `git bisect` verdict in it")
    # the first good and the first bad verdicts make the range when start named none
    for number, verdict, rev in list(log.verdicts):
        if verdict == "good" and not log.good:
            log.good.append((number, rev))
            log.verdicts.remove((number, verdict, rev))
        elif verdict == "bad" and not log.bad:
            log.bad.append((number, rev))
            log.verdicts.remove((number, verdict, rev))
    return log


def _as_verdict(word: str, terms: tuple[str, str]) -> str | None:
    if word in ("good", "old", terms[0]):
        return "good"
    if word in ("bad", "new", terms[1]):
        return "bad"
    if word == "skip":
        return "skip"
    return None


def _start(args: list[str], number: int, pending: list[tuple[str, str]]) -> BisectLog:
    log = BisectLog()
    old, new = "good", "bad"
    revs: list[str] = []
    rest = iter(args)
    for arg in rest:
        if arg == "--":
            paths = list(rest)
            if paths:
                raise BisectLogError(
                    f"line {number}: the bisection is limited to paths ({' '.join(paths)}), "
                    "which tritonbisect does not support"
                )
            break
        if arg.startswith(("--term-old=", "--term-good=")):
            old = arg.split("=", 1)[1]
        elif arg.startswith(("--term-new=", "--term-bad=")):
            new = arg.split("=", 1)[1]
        elif arg == "--first-parent":
            log.first_parent = True
        elif arg.startswith("--"):
            continue  # --no-checkout and the like change nothing here
        else:
            revs.append(arg)
    log.terms = (old, new)
    # git writes "# bad: [sha]" / "# good: [sha]" just before a start that named revisions:
    # those shas, not the names (HEAD, a branch) that have moved since
    named_bad = [sha for term, sha in pending if _as_verdict(term, log.terms) == "bad"]
    named_good = [sha for term, sha in pending if _as_verdict(term, log.terms) == "good"]
    if revs:
        log.bad.append((number, named_bad[0] if named_bad else revs[0]))
        for i, rev in enumerate(revs[1:]):
            log.good.append((number, named_good[i] if i < len(named_good) else rev))
    return log


def replayed_records(
    log: BisectLog,
    *,
    phase: str,
    good: str,
    bad: str,
    resolve: Callable[[int, str], list[str]],
    in_range: Callable[[str], bool],
    source: str,
    stamp: str,
) -> tuple[list[dict[str, Any]], list[str]]:
    """Journal records for a session started from `log`: the range's two endpoints as given,
    then every later verdict inside the range, kind "manual". `resolve(line, rev)` gives the
    full shas a revision names (a range names several). Returns (records, notes)."""
    notes: list[str] = []
    base: dict[str, Any] = {"phase": phase, "kind": "manual", "worker": None, "started": stamp,
            "finished": stamp, "seconds": 0.0, "build": None, "tests": [], "dir": ""}
    line_of = {"good": log.good[0][0] if log.good else 0, "bad": log.bad[0][0] if log.bad else 0}
    records: list[dict[str, Any]] = []
    for commit, verdict in ((good, "good"), (bad, "bad")):
        records.append({**base, "seq": len(records) + 1, "role": "endpoint", "round": 0,
                        "commit": commit, "verdict": verdict,
                        "reason": f"{verdict} in {source} line {line_of[verdict]}"})
    extra = [(n, "good", rev) for n, rev in log.good[1:]] + [(n, "bad", rev) for n, rev in log.bad[1:]]
    for number, verdict, rev in sorted(extra + log.verdicts):
        for sha in resolve(number, rev):
            if sha in (good, bad):
                continue
            if not in_range(sha):
                notes.append(f"line {number}: {sha[:12]} is outside {good[:12]}..{bad[:12]}; ignored")
                continue
            records.append({**base, "seq": len(records) + 1, "role": "search", "round": 0,
                            "commit": sha, "verdict": verdict,
                            "reason": f"{verdict} in {source} line {number}"})
    return records, notes
