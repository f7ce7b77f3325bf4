"""The confirmation of a classic answer: the culprit and its parent are tested again, on the
builds the phase already has where it can (the artifact cache, or a worker's checkout that
still holds the commit's build), and a person's verdict is not re-tested."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from tritonbisect.core.outcome import Verdict
from tritonbisect.session.builds_at_hand import BuildsAtHand
from tritonbisect.session.journal import ROLE_CONFIRM
from tritonbisect.session.phase_context import PhaseContext
from tritonbisect.session.step_queue import Finished, StepQueue

OBSERVED = (Verdict.GOOD, Verdict.BAD, Verdict.SKIP)


@dataclass
class Confirmed:
    """What the confirmation found: each commit's record (a mark: {"verdict", "kind"})."""

    culprit: str
    parent: str
    records: dict[str, dict[str, Any]]

    @property
    def culprit_bad(self) -> bool:
        return self.records[self.culprit]["verdict"] == Verdict.BAD

    @property
    def parent_good(self) -> bool:
        return self.records[self.parent]["verdict"] == Verdict.GOOD


@dataclass(frozen=True)
class TakenBack:
    """A person took back, at the prompt, an answer the culprit rests on."""


class Confirmation:
    """See the module docstring."""

    def __init__(self, ctx: PhaseContext, queue: StepQueue, builds: BuildsAtHand, *, one_at_a_time: bool,
                 paired: bool = False) -> None:
        self.spec = ctx.spec
        self.cands = ctx.cands
        self.history = ctx.history
        self.journal = ctx.journal
        self.queue = queue
        self.builds = builds
        self.names = ctx.names
        self.ui = ctx.ui
        self.one_at_a_time = one_at_a_time  # judged by hand: the checkout shown is the one judged
        self.abort = ctx.abort
        # --perf-design paired: each culprit is an A/B against its parent (the sandwich's second half)
        self.paired = paired

    def parent_of(self, culprit: str, verdicts: Mapping[str, str]) -> str:
        """The parent the culprit is compared with: a good one among its parents in the range,
        else its first parent (the good endpoint when it is the first commit of a list)."""
        parents = tuple(self.cands.parents.get(culprit, ()))
        if parents:
            goods = [p for p in parents if verdicts.get(p) == Verdict.GOOD]
            return (goods or list(parents))[0]
        if self.spec.candidates:
            return str(self.spec.good)
        try:
            return str(self.history.resolve(f"{culprit}^1"))
        except Exception:  # noqa: BLE001
            return str(self.spec.good)

    def run(self, culprit: str, parent: str) -> Confirmed | TakenBack | None:
        """Re-test what the journal does not hold yet; None when the phase aborted."""
        found = self.retest([(culprit, parent)])
        if found is None or isinstance(found, TakenBack):
            return found
        return Confirmed(culprit, parent, found)

    def retest(self, pairs: Sequence[tuple[str, str]]) -> dict[str, dict[str, Any]] | TakenBack | None:
        """Re-test each (culprit, parent) the journal holds no confirmation of, all at once
        (several culprits: one per case of a test that reports cases); each commit's record
        (a mark: {"verdict", "kind"}), or None when the phase aborted."""
        if self.paired:
            return self._against_parents(pairs)
        ev = self.journal.evidence()
        marks = ev.marks  # a person's verdict is not re-tested
        found: dict[str, dict[str, Any]] = {}
        for step in self.journal.steps():
            undone = (step.seq or 0) in ev.undone
            if step.role == ROLE_CONFIRM and step.verdict in OBSERVED and not undone:
                found[str(step.commit)] = dict(step.raw)
        commits = [c for pair in pairs for c in pair]
        todo = [c for c in dict.fromkeys(commits) if c not in found and c not in marks]
        if todo:
            culprits = list(dict.fromkeys(c for c, _ in pairs))
            parents = list(dict.fromkeys(p for _, p in pairs))
            if len(culprits) == 1:
                self.ui.note(f"confirming: re-testing {self.names.named(culprits[0])} and "
                             f"{self.names.parent(parents[0]).rstrip(',')}")
            else:
                self.ui.note(f"confirming {len(culprits)} culprits: re-testing "
                             f"{', '.join(c[:12] for c in culprits)} and their parents {', '.join(p[:12] for p in parents)}")
        keep: dict[str, None] = {}
        for culprit, parent in pairs:
            keep.update(dict.fromkeys(self.builds.kept_for_confirmation(culprit, parent)))
        self.queue.keep_builds(tuple(keep))
        todo = self.builds.confirm_order(todo)
        for batch in [[c] for c in todo] if self.one_at_a_time else [todo]:
            for commit in batch:
                self.queue.submit(commit, ROLE_CONFIRM, None, reuse=self.builds.reuse)
            stopped = self._drain(lambda done, rec: found.__setitem__(done.step.commit, rec))
            if stopped is not True:
                return stopped
        for commit, verdict in marks.items():
            found[commit] = {"verdict": verdict, "kind": "marked"}
        return found

    def _drain(self, keep: Callable[[Finished, dict[str, Any]], None]) -> TakenBack | None | Literal[True]:
        """Wait for the queued re-tests, showing each and handing its record to `keep`: True when
        all finished, None when one aborted the phase, TakenBack when a person took an answer back."""
        while self.queue:
            for done in self.queue.finished():
                if done.rec is None:
                    continue
                commit = done.step.commit
                self.ui.step_finished(self.spec.name, done.rec, self.names.subject(commit), None)
                if done.aborted:
                    self.abort(f"confirmation of {commit[:12]}: {done.result.reason}")
                    return None
                keep(done, done.rec)
                if done.corrected:
                    return TakenBack()
        return True

    def _against_parents(self, pairs: Sequence[tuple[str, str]]) -> dict[str, dict[str, Any]] | TakenBack | None:
        """--perf-design paired: each culprit the journal holds no A/B of is run paired with its
        parent, with the sandwich's bounds; the parent is the reference of that A/B (good by
        its role), the culprit's record says how much slower it is."""
        ev = self.journal.evidence()
        marks = ev.marks
        found: dict[tuple[str, str], dict[str, Any]] = {}
        for step in self.journal.steps():
            against = step.perf.get("reference_commit")
            undone = (step.seq or 0) in ev.undone
            if step.role == ROLE_CONFIRM and against and step.verdict in OBSERVED and not undone:
                found[(str(step.commit), str(against))] = dict(step.raw)
        todo = [pair for pair in dict.fromkeys(pairs) if pair not in found and pair[0] not in marks]
        if todo:
            said = ", ".join(f"{self.names.named(c)} against its parent {self.names.named(p)}" for c, p in todo)
            self.ui.note(f"A/B of the culprit: {said}")
        keep: dict[str, None] = {}
        for culprit, parent in pairs:
            keep.update(dict.fromkeys(self.builds.kept_for_confirmation(culprit, parent)))
        self.queue.keep_builds(tuple(keep))
        for culprit, parent in todo:
            self.queue.submit(culprit, ROLE_CONFIRM, None, reuse=self.builds.reuse, reference=parent, verify=True)
        stopped = self._drain(
            lambda done, rec: found.__setitem__((done.step.commit, str(done.step.request.reference)), rec))
        if stopped is not True:
            return stopped
        out: dict[str, dict[str, Any]] = {}
        for culprit, parent in pairs:
            got = found.get((culprit, parent))
            if got is not None:
                out[culprit] = got
            out.setdefault(parent, {"verdict": Verdict.GOOD.value, "kind": "reference",
                                    "reason": f"the reference of {culprit[:12]}'s A/B"})
        for commit, verdict in marks.items():
            out[commit] = {"verdict": verdict, "kind": "marked"}
        return out
