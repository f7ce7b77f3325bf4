"""What a session over several cases says about them: the JSON of each case's answer, the
lines of the summary, and the Markdown table of the report, grouped by culprit ("these 5
kernels regressed at abc123"). Reads what session/case_answer.py keeps in session.json."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from tritonbisect.session.case_answer import cases_state

if TYPE_CHECKING:  # pragma: no cover
    from tritonbisect.session.session import Session

_JSON_KEYS = ("culprit", "status", "confidence", "probability", "tests", "candidates", "reason", "revert",
              "culprits", "next_culprit_search")


def cases_json(session: Session, phase: str) -> dict[str, Any]:
    """`cases` (each regressed or left-out case's answer) and `cases_not_regressed` for
    --json; empty when the phase's test reports no cases."""
    state = cases_state(session, phase)
    if state is None:
        return {}
    cases = {
        name: {k: entry.get(k) for k in _JSON_KEYS if k in entry or k in ("culprit", "status", "tests")}
        for name, entry in (state.get("cases") or {}).items()
    }
    return {"cases": cases, "cases_not_regressed": list(state.get("not_regressed") or [])}


def by_culprit(state: Mapping[str, Any]) -> list[tuple[str, list[str]]]:
    """(culprit, its cases), earliest culprit first."""
    cases = state.get("cases") or {}
    return [(c, [n for n, e in cases.items() if e.get("culprit") == c]) for c in state.get("culprits") or []]


def _others(state: Mapping[str, Any]) -> dict[str, list[str]]:
    """The cases without a culprit, by status."""
    out: dict[str, list[str]] = {}
    for name, entry in (state.get("cases") or {}).items():
        if not entry.get("culprit"):
            out.setdefault(str(entry.get("status")), []).append(name)
    return out


def _listed(names: list[str], most: int = 8) -> str:
    return ", ".join(names[:most]) + (f" and {len(names) - most} more" if len(names) > most else "")


def summary_lines(session: Session, phase: str, subject: Callable[[str], str] = lambda _c: "") -> list[str]:
    """The lines `run` prints after the answer: one per culprit with its cases, then the
    cases without one."""
    state = cases_state(session, phase)
    if state is None:
        return []
    cases = state.get("cases") or {}
    out = []
    for culprit, names in by_culprit(state):
        low = [n for n in names if cases[n].get("confidence") == "low"]
        said = f" (low confidence: {_listed(low)})" if low else ""
        revert = sorted({str(cases[n]["revert"]) for n in names if cases[n].get("revert")})
        said += f"; revert: {', '.join(revert)}" if revert else ""
        title = f"{culprit[:12]} {subject(culprit)[:50]}".strip()
        out.append(f"  {title}: {len(names)} case{'s' if len(names) != 1 else ''} ({_listed(names)}){said}")
    others = _others(state)
    for status, names in others.items():
        if status == "inconclusive":
            out.append(f"  inconclusive: {_listed(names)}")
        elif status == "invalid-endpoints":
            out.append(f"  left out, already failing at the good commit: {_listed(names)}")
        else:
            out.append(f"  {status}: {_listed(names)}")
    if state.get("not_regressed"):
        out.append(f"  {len(state['not_regressed'])} more case(s) pass at the bad commit")
    if by_culprit(state):
        n = len(by_culprit(state))
        found = sum(len(names) for _, names in by_culprit(state))
        out.insert(0, f"cases: {found} regressed at {n} commit{'s' if n != 1 else ''}")
    return out


def markdown_lines(state: Mapping[str, Any] | None, subject: Callable[[str], str], level: str) -> list[str]:
    """The report's cases section: per culprit, a line and the table of its cases."""
    if not state or not state.get("cases"):
        return []
    cases = state["cases"]
    reverted = any(e.get("revert") for e in cases.values())
    out = ["", f"{level} Cases", ""]
    for culprit, names in by_culprit(state):
        title = f"`{culprit[:12]}` {_md(subject(culprit))}".strip()
        out.append(f"- **{len(names)} case{'s' if len(names) != 1 else ''} regressed at {title}:** "
                   f"{_md(_listed(names, 20))}")
    out.append("")
    out.append("| case | culprit | status | confidence | tests |" + (" revert |" if reverted else ""))
    out.append("|------|---------|--------|------------|-------|" + ("--------|" if reverted else ""))
    order = [n for _, names in by_culprit(state) for n in names]
    order += [n for n in cases if n not in order]
    for name in order:
        entry = cases[name]
        culprit = entry.get("culprit")
        cell = f"`{culprit[:12]}`" if culprit else _md(entry.get("reason") or "—")
        out.append(f"| {_md(name)} | {cell} | {entry.get('status')} | {entry.get('confidence') or '—'} "
                   f"| {entry.get('tests', 0)} |" + (f" {entry.get('revert') or '—'} |" if reverted else ""))
    if state.get("not_regressed"):
        out.append("")
        out.append(f"{len(state['not_regressed'])} more case(s) pass at the bad commit: "
                   f"{_md(_listed(list(state['not_regressed']), 20))}.")
    return out


def step_cell(cases: Mapping[str, Any] | None, searched: list[str]) -> str:
    """A step's cell in the report's steps table: which searched cases it found bad."""
    if not cases:
        return "—"
    bad = [n for n in searched if (cases.get(n) or {}).get("verdict") == "bad"]
    if not bad:
        return "none bad" if any(n in cases for n in searched) else "—"
    return "bad: " + _md(_listed(bad, 4))


def searched_cases(state: Mapping[str, Any] | None) -> list[str]:
    """The cases a phase searched (those the endpoints showed regressed)."""
    cases = (state or {}).get("cases") or {}
    return [n for n, e in cases.items() if e.get("status") != "invalid-endpoints"]


def step_cases(rec: Mapping[str, Any], open_cases: tuple[str, ...]) -> str:
    """A step's verdicts for the cases still open, for its line in the live display."""
    reported = rec.get("cases") or {}
    shown = [f"{name} {reported[name].get('verdict')}" for name in open_cases[:6] if name in reported]
    if not shown:
        return ""
    more = f" +{len(open_cases) - 6} open" if len(open_cases) > 6 else ""
    return " [" + ", ".join(shown) + more + "]"


def _md(text: str | None) -> str:
    return (text or "").replace("|", "\\|").replace("\n", " ")
