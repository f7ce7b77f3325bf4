"""One night of a regression hunt: test the head, and bisect only what is new and real.

    green head                      -> it becomes the last good (one test); open regressions
                                       are recorded as fixed
    red head, a regression open     -> known: one test, no bisect
    red head, nothing open          -> re-test it --confirm times (a pass: flaky, stop);
                                       the last good must still pass (else the environment
                                       changed: stop); bisect last good..head in a normal
                                       session, whose endpoints are the steps just run
    a session left running (kill -9) -> resume it, and end the night there

Every change of the state file is written before the step that depends on it, so a night
killed at any point is taken up by the next one.
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tritonbisect.core.clock import now_iso
from tritonbisect.core.errors import (
    EXIT_ABORTED,
    EXIT_ENDPOINTS_INVALID,
    EXIT_INCONCLUSIVE,
    EXIT_NEW_REGRESSION,
)
from tritonbisect.hunt.memory import FIXED, OPEN, HuntState, Regression
from tritonbisect.hunt.night_steps import (
    ROLE_HEAD,
    ROLE_LAST_GOOD,
    ROLE_REFERENCE,
    ROLE_RETEST,
    Prober,
    as_endpoint,
)
from tritonbisect.hunt.targets import HuntTarget
from tritonbisect.session.observer import Display
from tritonbisect.session.session import Session, counters_of, drive
from tritonbisect.session.settings import BisectSettings

if TYPE_CHECKING:  # pragma: no cover
    from tritonbisect.session.phases import SessionResult

MAX_NIGHT_DIRS = 60  # night folders kept (those a regression points to are kept too)

# night statuses and their exit codes (README: "Exit codes of hunt")
STATUS_EXIT = {
    "green": 0,
    "fixed": 0,
    "known": 0,
    "flaky": 0,
    "new": EXIT_NEW_REGRESSION,
    "inconclusive": EXIT_INCONCLUSIVE,
    "untestable": EXIT_INCONCLUSIVE,
    "environment": EXIT_ENDPOINTS_INVALID,
    "no-good": EXIT_ENDPOINTS_INVALID,
    "aborted": EXIT_ABORTED,
}


@dataclass
class NightOptions:
    bad: str | None = None  # the head to test (default: the target's newest)
    good: str | None = None  # the last good to use (seeds a new state, or replaces it)
    confirm: int = 2  # re-tests of a red head before a bisect


@dataclass
class NightResult:
    status: str
    message: str
    night_id: str
    night_dir: Path
    head: str | None = None
    last_good: str | None = None  # after the night
    previous_good: str | None = None  # before it
    steps: list[dict[str, Any]] = field(default_factory=list)
    session: Session | None = None
    session_records: list[dict[str, Any]] = field(default_factory=list)  # run tonight
    resumed: bool = False
    new: Regression | None = None
    also_new: list[Regression] = field(default_factory=list)  # the other culprits of a test's cases
    known: list[Regression] = field(default_factory=list)
    fixed: list[Regression] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return STATUS_EXIT[self.status]

    def counters(self) -> dict[str, int]:
        return counters_of([*self.steps, *self.session_records])


class Night:
    def __init__(
        self,
        target: HuntTarget,
        settings: BisectSettings,
        state: HuntState,
        options: NightOptions,
        ui: Display,
        *,
        hunt_dir: Path,
        bisect_argv: Callable[[str, str], list[str]],
        record_command: str | None = None,
    ) -> None:
        self.target = target
        self.settings = settings
        self.state = state
        self.options = options
        self.ui = ui
        self.hunt_dir = hunt_dir
        self.bisect_argv = bisect_argv
        self.record_command = record_command  # an oracle's "record the golden" command
        perf = settings.perf_settings()
        self.perf = perf is not None
        self.paired = perf is not None and perf.paired  # the head is an A/B against the last good
        self.id = datetime.now().strftime("%Y%m%d-%H%M%S")
        self.dir = _unique_dir(hunt_dir / "nights", self.id)
        self.id = self.dir.name
        self.prober: Prober | None = None
        self._subjects: dict[str, str] = {}

    # helpers ---------------------------------------------------------------------------

    def subject(self, rev: str) -> str:
        if rev not in self._subjects:
            self._subjects[rev] = self.target.subject(rev)
        return self._subjects[rev]

    def _probe(self, commit: str, role: str, *, head: str, record: bool = False,
               baseline: tuple[float, ...] | None = None, reference: str | None = None,
               verify: bool = False) -> dict[str, Any]:
        if self.prober is None:
            spec = self.target.phase(self.state.last_good or head, head)
            self.prober = Prober(spec, self.settings, self.dir, self.ui, self.subject)
        step = self.target.step_commit(self.prober.spec, commit)
        ref = self.target.step_commit(self.prober.spec, reference) if reference else None
        return self.prober.step(step, role, record=record, baseline=baseline, reference=ref, verify=verify)

    def _result(self, status: str, message: str, **kw: Any) -> NightResult:
        steps = self.prober.records if self.prober else []
        return NightResult(status, message, self.id, self.dir, steps=steps, **kw)

    # the night -------------------------------------------------------------------------

    def run(self) -> NightResult:
        self.dir.mkdir(parents=True, exist_ok=True)
        try:
            result = self._run()
        finally:
            if self.prober is not None:
                self.prober.close()
        self._record(result)
        return result

    def _run(self) -> NightResult:
        state = self.state
        if state.active:
            resumed = self._resume_active()
            if resumed is not None:
                return resumed
        head = self.target.head(self.options.bad)
        previous = state.last_good
        if self.options.good:
            good = self.target.resolve(self.options.good)
            if previous and good != previous:
                self.ui.note(f"--good {good[:12]} replaces the last good {previous[:12]} of the state")
            state.last_good, state.last_good_at = good, now_iso()
            state.save()
        last_good = state.last_good
        n_new = None
        if last_good and last_good != head:
            if not self.target.is_before(last_good, head):
                return self._result(
                    "no-good",
                    f"the last good {last_good[:12]} is not an ancestor of the head {head[:12]} "
                    "(history rewritten?); pass --good REV, a commit on the head's history where "
                    "the test passes",
                    head=head, last_good=last_good, previous_good=previous,
                )
            n_new = self.target.count_between(last_good, head)
        self.ui.note(
            f"hunt night {self.id}: head {head[:12]} {self.subject(head)[:60]}; "
            + (
                f"last good {last_good[:12]}, {n_new} new commit(s)"
                if last_good and n_new is not None
                else "no new commit since the last good"
                if last_good
                else "no known good yet: a passing head becomes the first"
            )
        )
        base = dict(head=head, previous_good=previous)

        # the reference the head is compared against, measured first where there is one
        baseline: tuple[float, ...] | None = None
        reference: dict[str, Any] | None = None
        anchor = last_good or head
        if self.perf or self._needs_golden(anchor):
            reference = self._probe(anchor, ROLE_REFERENCE, head=head, record=self.record_command is not None)
            if reference["verdict"] == "abort":
                return self._result("aborted", f"the reference run at {anchor[:12]} aborted: {reference['reason']}", last_good=last_good, **base)
            if reference["verdict"] != "good":
                return self._environment(anchor, reference, head, last_good, base)
            if self.record_command is not None:
                state.reference = {"commit": anchor, "command": self.record_command, "at": now_iso()}
                state.save()
            if self.perf:
                baseline = tuple((reference.get("perf") or {}).get("samples") or ()) or None
            if anchor == head:  # no known good, or no new commit: the reference run is the test
                return self._after_green(reference, head, last_good, base)

        # paired: the head is the A/B against the last good (the sandwich's first half)
        pair = last_good if self.paired and last_good and last_good != head else None
        first = self._probe(head, ROLE_HEAD, head=head, baseline=baseline, reference=pair, verify=pair is not None)
        verdict = first["verdict"]
        if verdict == "abort":
            return self._result("aborted", f"testing the head aborted: {first['reason']}", last_good=last_good, **base)
        if verdict == "skip":
            return self._result(
                "untestable",
                f"the head {head[:12]} could not be judged ({first['kind']}: {first['reason']}); "
                "nothing recorded",
                last_good=last_good, **base,
            )
        if verdict == "good":
            return self._after_green(first, head, last_good, base)
        return self._after_red(first, head, last_good, baseline, reference, base, pair)

    def _needs_golden(self, anchor: str) -> bool:
        if self.record_command is None:
            return False
        ref = self.state.reference or {}
        return not (ref.get("commit") and ref.get("command") == self.record_command)

    def _after_green(self, rec: dict[str, Any], head: str, last_good: str | None, base: dict) -> NightResult:
        state = self.state
        fixed = []
        for reg in state.open_regressions():
            reg.status = FIXED
            reg.fixed_between = [reg.last_seen or reg.bad, head]
            reg.fixed_at = now_iso()
            fixed.append(reg)
        state.last_good, state.last_good_at = head, now_iso()
        state.save()
        if fixed:
            names = ", ".join(r.short for r in fixed)
            message = f"fixed: the head {head[:12]} passes again ({names})"
            return self._result("fixed", message, last_good=head, fixed=fixed, **base)
        first = " (the first known good)" if not last_good else ""
        return self._result("green", f"green: {head[:12]} passes{first}", last_good=head, **base)

    def _after_red(self, first: dict[str, Any], head: str, last_good: str | None,
                   baseline: tuple[float, ...] | None, reference: dict[str, Any] | None,
                   base: dict, pair: str | None = None) -> NightResult:
        state = self.state
        known = state.open_regressions()
        if known:
            notes = []
            for reg in known:
                reg.last_seen, reg.last_seen_at = head, now_iso()
                reg.nights_seen += 1
                if first["kind"] != reg.kind:
                    notes.append(
                        f"the failure changed since {reg.short} was found ({reg.kind} -> "
                        f"{first['kind']}): another regression may hide behind it"
                    )
            state.save()
            names = ", ".join(r.short for r in known)
            return self._result(
                "known", f"known regression: the head {head[:12]} still fails ({names}); not bisected again",
                last_good=last_good, known=known, notes=notes, **base,
            )
        if not last_good:
            return self._result(
                "no-good",
                f"no known good: the head {head[:12]} fails ({first['kind']}) and the state has "
                "no last good; pass --good REV, a commit where the test passes",
                last_good=None, **base,
            )
        for i in range(self.options.confirm):
            again = self._probe(head, ROLE_RETEST, head=head, baseline=baseline, reference=pair)
            if again["verdict"] == "abort":
                return self._result("aborted", f"re-testing the head aborted: {again['reason']}", last_good=last_good, **base)
            if again["verdict"] != "bad":
                state.flaky_nights += 1
                state.save()
                return self._result(
                    "flaky",
                    f"not confirmed: the head failed ({first['kind']}) but re-test {i + 1} of "
                    f"{self.options.confirm} gave {again['kind']}; not bisected (a flaky test?)",
                    last_good=last_good, **base,
                )
        if head == last_good:
            return self._environment(last_good, first, head, last_good, base)
        lg = reference
        if lg is None:
            lg = self._probe(last_good, ROLE_LAST_GOOD, head=head)
            if lg["verdict"] == "abort":
                return self._result("aborted", f"re-testing the last good aborted: {lg['reason']}", last_good=last_good, **base)
            if lg["verdict"] != "good":
                return self._environment(last_good, lg, head, last_good, base)
        return self._bisect(last_good, head, lg, first, base)

    def _environment(self, commit: str, rec: dict[str, Any], head: str, last_good: str | None, base: dict) -> NightResult:
        return self._result(
            "environment",
            f"the last good {commit[:12]} no longer passes ({rec['kind']}: {rec['reason']}): "
            "the machine, the test or a dependency changed, not the code; nothing bisected. "
            "Fix the environment, or pass --good REV to start from a commit that passes now",
            last_good=last_good, **base,
        )

    # the bisect ------------------------------------------------------------------------

    def _bisect(self, good: str, bad: str, good_rec: dict, bad_rec: dict, base: dict) -> NightResult:
        self.target.check_range(good, bad)
        spec = self.target.phase(good, bad)
        if self.prober is not None:
            self.prober.close()  # its worktree goes to the session's first worker
        argv = self.bisect_argv(good, bad)
        session = Session.create(
            self.settings.workdir, self.settings, [spec], workflow=self.target.workflow(), argv=argv
        )
        session.extra["hunt"] = {"state": str(self.state.path), "night": self.id, "kind": bad_rec["kind"]}
        self.target.prepare_session(session)
        session.save()
        # the night's steps are the session's endpoints: they are not run again
        session.journal.append(as_endpoint(good_rec, spec.name, 1))
        session.journal.append(as_endpoint(bad_rec, spec.name, 2))
        self.state.active = {
            "session": session.id, "good": good, "bad": bad, "kind": bad_rec["kind"],
            "reason": bad_rec["reason"], "night": self.id, "started": now_iso(),
        }
        self.state.save()
        self.ui.note(
            f"the head fails ({bad_rec['kind']}), confirmed; the last good passes: bisecting "
            f"{good[:12]}..{bad[:12]} in session {session.id}"
        )
        return self._drive(session, base)

    def _drive(self, session: Session, base: dict, *, resumed: bool = False) -> NightResult:
        before = len(session.records())
        result = drive(session, self.ui)
        records = session.records()[before:]
        active = self.state.active or {}
        good, bad = active.get("good"), active.get("bad")
        kw = dict(base, session=session, session_records=records, resumed=resumed)
        kw.setdefault("head", bad)
        kw.setdefault("previous_good", good)
        if result.status == "aborted":
            return self._result(
                "aborted", f"the bisect aborted: {result.reason}; the next night resumes it "
                f"(or now: {session.resume_command()})", last_good=self.state.last_good, **kw,
            )
        self.state.active = None
        if result.status == "invalid-endpoints":
            self.state.save()
            return self._result("environment", f"the bisect's endpoints are invalid: {result.reason}",
                                last_good=self.state.last_good, **kw)
        found = self._case_regressions(session, result, active) or [self._regression(session, result, active)]
        new, known = [], []
        for reg in found:
            existing = self.state.find(reg.key)
            if existing is not None:
                existing.last_seen, existing.last_seen_at = reg.bad, now_iso()
                existing.status = OPEN
                known.append(existing)
            else:
                self.state.regressions.append(reg)
                new.append(reg)
        self.state.save()
        if not new:
            names = ", ".join(r.short for r in known)
            return self._result("known", f"the bisect found {names}, already reported",
                                last_good=self.state.last_good, known=known, **kw)
        reg = new[0]
        if reg.culprit:
            what = f"new regression: {reg.culprit[:12]} {reg.subject}"
            if len(new) > 1:  # a test that reports cases: one regression per culprit
                what = f"{len(new)} new regressions: " + ", ".join(f"{r.short} ({', '.join(r.cases)})" for r in new)
            return self._result("new", what, last_good=self.state.last_good, new=reg, also_new=new[1:],
                                known=known, **kw)
        return self._result(
            "inconclusive",
            f"new regression between {good[:12] if good else '?'} and {bad[:12] if bad else '?'}: "
            f"one of {len(reg.candidates)} commits that could not be tested",
            last_good=self.state.last_good, new=reg, **kw,
        )

    def _regression(self, session: Session, result: SessionResult, active: dict[str, Any], *,
                    culprit: str | None = None) -> Regression:
        culprit = culprit or (result.culprit if result.status == "found" else None)
        candidates = list(result.candidates or ([culprit] if culprit else []))
        if culprit:
            key = culprit
            subject = _subject_in(session, result.phase, culprit) or self.subject(culprit)
        else:
            first, last = (candidates[0], candidates[-1]) if candidates else ("?", "?")
            key = f"range:{first[:12]}..{last[:12]}"
            subject = f"one of {len(candidates)} untestable commits"
        return Regression(
            key=key, culprit=culprit, candidates=candidates, subject=subject,
            kind=str(active.get("kind") or ""), reason=str(active.get("reason") or ""),
            good=str(active.get("good")), bad=str(active.get("bad")), found_at=now_iso(),
            session=session.id, confidence=result.confidence, status=OPEN,
            last_seen=str(active.get("bad")), last_seen_at=now_iso(),
        )

    def _case_regressions(self, session: Session, result: SessionResult, active: dict[str, Any]) -> list[Regression]:
        """One regression per culprit of a test that reports cases (each names its cases),
        earliest first; [] when the session has no cases' culprits."""
        state = ((session.extra.get("cases") or {}).get(result.phase) or {}) if result.status == "found" else {}
        cases = state.get("cases") or {}
        out = []
        for culprit in state.get("culprits") or []:
            names = [n for n, e in cases.items() if e.get("culprit") == culprit]
            reg = self._regression(session, result, active, culprit=culprit)
            reg.cases, reg.candidates = names, [culprit]
            reg.confidence = "low" if any(cases[n].get("confidence") == "low" for n in names) else "high"
            out.append(reg)
        return out

    def _resume_active(self) -> NightResult | None:
        active = self.state.active or {}
        try:
            session = Session.open(self.settings.workdir, str(active.get("session")))
        except Exception as exc:  # noqa: BLE001 - the folder is gone (a cache evicted?)
            self.ui.note(f"the bisect session {active.get('session')} of an earlier night is gone ({exc}); starting afresh")
            self.state.active = None
            self.state.save()
            return None
        self.ui.note(
            f"resuming the bisect session {session.id} ({str(active.get('good'))[:12]}.."
            f"{str(active.get('bad'))[:12]}) left unfinished on {active.get('started')}"
        )
        return self._drive(session, {"head": active.get("bad"), "previous_good": active.get("good")}, resumed=True)

    # bookkeeping -----------------------------------------------------------------------

    def _record(self, result: NightResult) -> None:
        c = result.counters()
        self.state.record_night({
            "night": self.id, "at": now_iso(), "head": result.head, "status": result.status,
            "exit_code": result.exit_code, "tests": c["tests"], "builds": c["builds"],
            "session": result.session.id if result.session else None,
        })
        self.state.save()
        self._prune()

    def _prune(self) -> None:
        """Keep the newest night folders; a night whose steps a session's journal points to
        stays while its regression is recorded."""
        root = self.hunt_dir / "nights"
        keep = {r.get("night") for r in [self.state.active or {}]}
        keep |= {n["night"] for n in self.state.nights if n.get("session")}
        dirs = sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
        for old in dirs[:-MAX_NIGHT_DIRS]:
            if old.name not in keep:
                with contextlib.suppress(OSError):
                    shutil.rmtree(old)


def _unique_dir(root: Path, name: str) -> Path:
    path, n = root / name, 1
    while path.exists():
        n += 1
        path = root / f"{name}-{n}"
    return path


def _subject_in(session: Session, phase_name: str, commit: str) -> str:
    from tritonbisect.core.history import History

    phase = next((p for p in session.phases() if p.spec.name == phase_name), None)
    if phase is None:
        return ""
    try:
        return History(phase.spec.repo).commit_info(commit).subject
    except Exception:  # noqa: BLE001
        return ""
