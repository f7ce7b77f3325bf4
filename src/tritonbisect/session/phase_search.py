"""The search loop of one phase: keeps the workers busy with the commits that narrow the
range most, re-tests contradicting verdicts, and stops steps whose verdict no longer matters.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from tritonbisect.session.journal import ROLE_SEARCH
from tritonbisect.session.phase_flaky import FlakySearch


class SearchLoop(FlakySearch):
    """The search part of `phase_run.PhaseRun`, which sets up the state it works on (cands,
    records, verdicts, overrides, queue, recipe, ui) and the step helpers
    (_abort, _effective, subject, _progress). The flake-aware
    search and the switch to it are in `phase_flaky.FlakySearch`."""

    def _search(self):
        from tritonbisect.search import classic as search
        from tritonbisect.session.evidence import classic_verdicts

        if self._flake_aware():
            return self._bayes_search()
        spec = self.spec
        in_set = self._in_set
        search_counts: Counter[str] = Counter()
        finished_round = 0
        for rec in self.records:
            if rec.get("role") == ROLE_SEARCH:
                search_counts[rec["commit"]] += 1
                finished_round = max(finished_round, int(rec.get("round") or 0))
        ev = self._evidence()
        marks = ev.marks  # a person's verdicts: never re-tested, never overridden
        self.verdicts.update(classic_verdicts(ev, in_set))
        self.verdicts.setdefault(spec.bad, "bad")
        cached = self._known_cached()
        guard = 0
        while True:
            flying = self.queue.flying()
            free = self.settings.jobs - len(self.queue.live())
            if free > 0:
                action = search.next_step(
                    self.cands, self._effective(), workers=free, in_flight=flying, cached=cached
                )
            else:
                action = search.Wait()
            submitted = 0
            if isinstance(action, search.TestNext):
                for commit in action.commits:
                    if submitted >= free:
                        break
                    if commit in flying:
                        continue
                    self.queue.submit(commit, ROLE_SEARCH, finished_round + 1)
                    submitted += 1
            elif isinstance(action, search.Conflict):
                if self._switch_on_flakiness("verdicts contradict the history"):
                    return self._bayes_search()
                retest: list[str] = []
                for commit in action.commits:
                    if commit in flying or commit in marks:
                        continue
                    if search_counts[commit] >= 2 or commit not in in_set:
                        # tested twice and still contradicting: do not trust it
                        if self.overrides.get(commit) != "skip":
                            self.overrides[commit] = "skip"
                            self.ui.note(f"{commit[:12]} keeps contradicting the history: skipped")
                            submitted += 1
                    elif len(retest) < max(free, 0):
                        retest.append(commit)
                if retest:
                    self.ui.note(
                        "verdicts contradict the history (a flaky test?); re-testing "
                        + ", ".join(c[:12] for c in retest)
                    )
                for commit in retest:
                    self.queue.submit(commit, ROLE_SEARCH, finished_round + 1)
                    search_counts[commit] += 1
                    submitted += 1
            elif isinstance(action, (search.Found, search.Inconclusive)):
                for rec in self.queue.settle():
                    self.ui.step_finished(spec.name, rec, self.subject(rec["commit"]), None)
                return action
            if submitted:
                guard = 0
                continue
            if not self.queue:
                guard += 1
                if guard > 2:
                    raise RuntimeError(f"search made no progress ({action!r})")
                continue
            learned = False
            for done in self.queue.finished():
                if done.rec is None:
                    continue
                rec, result = done.rec, done.result
                commit, role, round_ = done.step.commit, done.step.role, done.step.round
                if done.aborted:
                    self.ui.step_finished(spec.name, rec, self.subject(commit), None)
                    self._abort(f"{commit[:12]}: {result.reason}")
                    return None
                if self._caches and (rec.get("build") or {}).get("kind") == "pass":
                    cached = cached | {commit}
                if role == ROLE_SEARCH and commit in in_set:
                    if commit not in marks:
                        self.verdicts[commit] = result.verdict
                    finished_round = max(finished_round, round_ or 0)
                    learned = True
                self.ui.step_finished(spec.name, rec, self.subject(commit), self._progress())
            if learned and self._switch_on_flakiness():
                return self._bayes_search()
            if learned:
                self._cancel_useless()

    def _implied(self) -> set[str] | None:
        """Commits whose verdict follows from the verdicts so far: ancestors of a good commit
        are good, descendants of a bad one bad. None while the verdicts contradict."""
        if self._children is None:
            children: dict[str, list[str]] = {}
            for c in self.cands.order:
                for p in self.cands.parents.get(c, ()):
                    children.setdefault(p, []).append(c)
            self._children = children
        kids = self._children
        eff = self._effective()

        def closure(start: list[str], step: Callable[[str], Any]) -> set[str]:
            seen = set(start)
            stack = list(start)
            while stack:
                for nxt in step(stack.pop()):
                    if nxt not in seen:
                        seen.add(nxt)
                        stack.append(nxt)
            return seen

        goods = [c for c, v in eff.items() if v == "good" and c in self._in_set]
        bads = [c for c, v in eff.items() if v == "bad" and c in self._in_set]
        anc = closure(goods, lambda c: self.cands.parents.get(c, ()))
        desc = closure(bads, lambda c: kids.get(c, ()))
        if anc & desc:
            return None
        return anc | desc

    def _cancel_useless(self) -> None:
        """Stop in-flight steps whose verdict can no longer change anything (e.g. a commit
        above a newly found bad one): their workers take a useful commit instead."""
        targets = [
            step for step in self.queue.live()
            if step.role == ROLE_SEARCH and step.commit not in self.verdicts
        ]
        if not targets:
            return
        implied = self._implied()
        if not implied:
            return
        for step in targets:
            if step.commit in implied:
                self.queue.cancel(step)
                self.ui.note(f"stopped testing {step.commit[:12]}: its verdict no longer matters")

    def _known_cached(self) -> frozenset[str]:
        """Commits whose build is known to be cached, so testing them again costs no build.

        A recipe that caches builds (`recipe.caches_builds`, true for every recipe but the
        plain "command" one) has an artifact for every commit this phase built successfully;
        a recipe may also answer for other commits with `recipe.cached_commits(commits)`.
        """
        # the "command" recipe says caches_builds = False itself: no special case by name here
        self._caches = self.spec.prefer_cached and bool(getattr(self.recipe, "caches_builds", True))
        if not self._caches:
            return frozenset()
        out = {
            r["commit"] for r in self.records if (r.get("build") or {}).get("kind") == "pass"
        }
        hook = getattr(self.recipe, "cached_commits", None)
        if callable(hook):
            try:
                out |= set(hook(list(self.cands.order)))
            except Exception as exc:  # noqa: BLE001 - an optimisation only
                self.ui.note(f"could not list cached builds: {exc}")
        return frozenset(out)
