"""The `map` walk over one LLVM bump, and the one-off `fix`.

From the bump's old LLVM hash (the pin of T~1, `tritonbisect.domains.triton.llvm_pin`) to its new one:

    current = T~1, good = old_llvm
    loop:
        bisect (good, new_llvm] with LLVM probes of `current` for the first incompatible commit
            (new_llvm is assumed incompatible; the re-verification below checks it)
        re-verify that single commit with a clean probe
            compatible  -> a false positive: good = it, the search goes on from there
            (at new_llvm: `current` builds against everything left: last row, done)
        record the pair (current, last compatible LLVM commit)
        fix `current` against the incompatible commit (fixer.py), verified by a probe
        current = fix, good = the incompatible commit

The search (`bisect.search.next_step`) prefers LLVM commits whose build is already cached.
Every transition is saved to the session state before the next step starts.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from tritonbisect import __version__
from tritonbisect.compat_builder import gitops, provenance
from tritonbisect.compat_builder.fixer import Fixer, ManualFixNeeded, manual_instructions
from tritonbisect.compat_builder.probe import COMPATIBLE, INCOMPATIBLE, SEARCH_VERDICT, Prober
from tritonbisect.compat_builder.session_state import (
    DONE,
    FIXING,
    MANUAL,
    SEARCHING,
    MapState,
)
from tritonbisect.core.clock import now_iso
from tritonbisect.core.errors import AbortError, InputError
from tritonbisect.core.history import History
from tritonbisect.domains.llvm.compat_map import CompatMap, CompatRow, write_map
from tritonbisect.domains.triton.llvm_pin import LLVMPin, require_pin
from tritonbisect.search.classic import (
    Candidates,
    Conflict,
    Found,
    Inconclusive,
    TestNext,
    next_step,
)


class Mapper:
    def __init__(
        self,
        state: MapState,
        prober: Prober,
        fixer: Fixer,
        *,
        log: Callable[[str], None] = lambda m: None,
    ) -> None:
        self.state = state
        self.prober = prober
        self.fixer = fixer
        self.log = log
        self._order_cache: dict[tuple[str, str], list[str]] = {}
        self._llvm = History(Path(state.llvm_repo))

    # --- driving ----------------------------------------------------------------------
    def run(self) -> str:
        """Run to the end (returns the CSV path or the fix commit), or raise ManualFixNeeded."""
        st = self.state
        while st.phase != DONE:
            if st.phase == MANUAL:
                raise ManualFixNeeded(manual_instructions(st, self.fixer.workdir_hint))
            if st.phase == FIXING:
                self.accept_fix(self.fixer.fix())
            elif st.phase == SEARCHING and st.kind == "fix":
                self.start_fix()
            elif st.phase == SEARCHING:
                self.search_step()
            else:
                raise AbortError(f"session {st.id} is in an unknown phase {st.phase!r}")
        assert st.result is not None
        return st.result

    def accept_fix(self, commit: str) -> None:
        st = self.state
        gitops.reset_hard(Path(st.worktree), commit)
        made = next((a for a in st.attempts if a.get("commit") == commit and a.get("model")), None)
        # the files the model changed (the attempt's record): not the pin the builder wrote
        files = (made["files"] if made and "files" in made
                 else gitops.changed_files(Path(st.worktree), st.current_triton, commit))
        scripts = provenance.build_scripts(files)
        st.fixes.append({"llvm": st.incompatible, "commit": commit, "attempts": st.attempts,
                         "accepted": now_iso(), "model": made["model"] if made else None,
                         "files": files, "build_scripts": scripts})
        st.current_triton = commit
        st.current_good = st.incompatible or st.current_good
        st.incompatible = None
        st.incompatible_log = None
        st.attempts = []
        st.verdicts = {}
        st.phase = SEARCHING
        if st.kind == "fix":
            st.phase = DONE
            st.result = commit
        st.save("fix-accepted", commit=commit)
        self.log(f"fix accepted: {commit[:12]}" + (f" (by {made['model']})" if made else " (by hand)")
                 + f"; files: {', '.join(files)}")
        if scripts:
            self.log(f"REVIEW: fix {commit[:12]} changes build scripts ({', '.join(scripts)})")
        (st.dir / "fixes-report.txt").write_text(provenance.report(st.fixes) + "\n", encoding="utf-8")

    # --- the search -------------------------------------------------------------------
    def _order(self, good: str, bad: str) -> list[str]:
        key = (good, bad)
        if key not in self._order_cache:
            self._order_cache[key] = llvm_range(self._llvm, good, bad)
        return self._order_cache[key]

    def _search_start(self) -> str:
        """The good end of the search range."""
        st = self.state
        if self._whole_range():
            assert st.old_llvm is not None  # a map session's range
            return st.old_llvm  # the benchmark baseline: the whole range after every fix
        return st.current_good

    def triton_for(self, llvm: str) -> str:
        """The Triton commit probed at `llvm`: the current one; in the baseline strategy the
        one the map so far assigns to it."""
        st = self.state
        if self._whole_range():
            assert st.old_llvm is not None and st.new_llvm is not None  # a map session's range
            order = self._order(st.old_llvm, st.new_llvm)
            pos = order.index(llvm) if llvm in order else -1
            for triton, last in st.pairs:
                if last in order and pos <= order.index(last):
                    return triton
        return st.current_triton

    def search_step(self) -> None:
        st = self.state
        start = self._search_start()
        assert st.new_llvm is not None  # every session has its target LLVM
        order = self._order(start, st.new_llvm)
        if not order:  # current_good == new_llvm
            self.finish()
            return
        cands = Candidates.linear(order)
        verdicts = {c: v for c, v in st.verdicts.items() if c in set(order)}
        action = next_step(cands, verdicts, cached=self.prober.llvm_cached(order))
        if isinstance(action, TestNext):
            commit = action.commits[0]
            verdict = self.probe(commit, role="search")
            st.verdicts[commit] = SEARCH_VERDICT[verdict]
            st.save("probed", llvm=commit, verdict=verdict, remaining=action.remaining)
        elif isinstance(action, Found):
            self.reverify(action.culprit, order)
        elif isinstance(action, Inconclusive):
            # only unbuildable LLVM commits lie between the last good and the first bad:
            # the first bad one is what Triton must be fixed against
            self.reverify(action.candidates[-1], order, first_candidate=action.candidates[0])
        elif isinstance(action, Conflict):
            # a compatible commit after an incompatible one (an API broken and restored):
            # the first incompatible one counts; later verdicts are dropped
            first_bad = min((order.index(c) for c, v in verdicts.items() if v == "bad"), default=len(order))
            for c in order[first_bad + 1 :]:
                st.verdicts.pop(c, None)
            st.save("conflict-resolved", commits=list(action.commits))
        else:  # Wait cannot happen with one worker and nothing in flight
            raise AbortError(f"unexpected search action {action!r}")

    def probe(self, llvm: str, *, role: str, clean: bool = False):
        st = self.state
        triton = self.triton_for(llvm)
        n = len(st.probes) + 1
        result = self.prober.probe(triton, llvm, st.dir / "probes" / f"{n:03d}-{llvm[:12]}", clean=clean)
        st.probes.append({"n": n, "llvm": llvm, "triton": triton, "role": role, **result.to_dict()})
        built = ", ".join(w for w, b in (("LLVM built", result.llvm_built), ("Triton built", result.triton_built)) if b)
        self.log(f"probe LLVM {llvm[:12]} x Triton {triton[:12]} ({role}): {result.verdict}"
                 f"{f' ({built})' if built else ''}")
        self._last = result
        return result.verdict

    def _whole_range(self) -> bool:
        """The baseline strategy after its first fix: every search spans the whole bump."""
        return self.state.strategy == "restart" and bool(self.state.pairs)

    def reverify(self, culprit: str, order: list[str], *, first_candidate: str | None = None) -> None:
        st = self.state
        verdict = self.probe(culprit, role="reverify", clean=True)
        if verdict != INCOMPATIBLE:
            # a false positive (or the end of the range): the search goes on from there
            st.verdicts[culprit] = SEARCH_VERDICT[verdict]
            if verdict == COMPATIBLE and not self._whole_range():
                after = order[order.index(culprit) + 1 :]
                st.verdicts = {c: v for c, v in st.verdicts.items() if c in after}
                st.current_good = culprit
            at_end = culprit == st.new_llvm
            st.save("range-compatible" if at_end else "false-positive", llvm=culprit, verdict=verdict)
            if at_end and verdict == COMPATIBLE:
                self.finish()
            elif at_end:
                raise AbortError(f"the new LLVM {culprit[:12]} itself does not build ({self._last.reason}); "
                                 f"cannot map this bump (log: {self._last.log})")
            return
        index = order.index(first_candidate or culprit)
        self._record_incompatible(culprit, order[index - 1] if index > 0 else self._search_start())

    def _record_incompatible(self, culprit: str, last_good: str) -> None:
        st = self.state
        triton = self.triton_for(culprit)
        found_log = st.dir / f"found-{culprit[:12]}-build.log"
        if self._last.log is not None and Path(self._last.log).is_file():
            shutil.copyfile(self._last.log, found_log)  # the whole log
        else:
            found_log.write_text(self._last.reason + "\n", encoding="utf-8")
        st.incompatible = culprit
        st.incompatible_log = str(found_log)
        st.current_triton = triton
        st.attempts = []
        st.phase = FIXING
        st.save("found-incompatible", llvm=culprit, last_good=last_good, log=str(found_log))
        self.log(f"LLVM {culprit[:12]} breaks Triton {triton[:12]}; last compatible LLVM {last_good[:12]}")
        if st.kind == "map":
            st.pairs.append([triton, last_good])
            st.save("pair-recorded", triton=triton, llvm=last_good)

    def start_fix(self) -> None:
        """A `fix` session's first step: is there anything to fix at all?"""
        st = self.state
        llvm = st.new_llvm
        assert llvm is not None  # a fix session's target LLVM
        verdict = self.probe(llvm, role="initial", clean=True)
        if verdict == COMPATIBLE:
            st.phase = DONE
            st.result = st.current_triton
            st.save("already-compatible", llvm=llvm)
            self.log(f"Triton {st.current_triton[:12]} already builds against LLVM {llvm[:12]}")
        elif verdict == INCOMPATIBLE:
            self._record_incompatible(llvm, "")
        else:
            raise InputError(f"LLVM {llvm[:12]} itself does not build, so there is nothing to fix "
                             f"against: {self._last.reason} (log: {self._last.log})")

    def finish(self) -> None:
        st = self.state
        assert st.new_llvm is not None and st.old_llvm is not None and st.bump is not None  # a map session
        st.pairs.append([st.current_triton, st.new_llvm])
        st.save("pair-recorded", triton=st.current_triton, llvm=st.new_llvm)
        cmap = CompatMap(
            metadata={
                "bump": st.bump,
                "old_llvm": st.old_llvm,
                "new_llvm": st.new_llvm,
                "final_bad_triton_commit": st.bump,
                "final_bad_llvm": st.new_llvm,
                "generated_at": now_iso(),
                "tool_version": __version__,
                **({"needs_review": review} if (review := provenance.needs_review_value(st.fixes)) else {}),
            },
            rows=[CompatRow(t, llvm) for t, llvm in st.pairs],
        )
        out = Path(st.out_csv or st.dir / "commits.csv")
        write_map(out, cmap)
        for line in provenance.report(st.fixes).splitlines():
            self.log(line)
        st.phase = DONE
        st.result = str(out)
        st.save("done", result=st.result)
        self.log(f"map complete: {len(st.pairs)} row(s) written to {out}")

    # --- manual fixes -----------------------------------------------------------------
    def accept_manual_fix(self, commit_rev: str) -> str:
        """`resume --fix-commit C`: C must descend from the commit being fixed and build
        against the incompatible LLVM commit; then the walk goes on from it."""
        st = self.state
        if st.phase not in (MANUAL, FIXING) or not st.incompatible:
            raise InputError(f"session {st.id} is not waiting for a fix (phase: {st.phase})")
        worktree = Path(st.worktree)
        history = History(worktree)
        commit = history.resolve(commit_rev)
        if not history.is_ancestor(st.current_triton, commit):
            raise InputError(
                f"{commit[:12]} does not descend from {st.current_triton[:12]}, the head of "
                f"{st.branch} being fixed; commit the fix on that branch (in {st.worktree})"
            )
        if commit == st.current_triton:
            raise InputError(f"{commit[:12]} is the commit being fixed itself: commit your fix first")
        result = self.prober.probe(commit, st.incompatible, st.dir / "probes" / f"manual-{commit[:12]}", clean=True)
        st.probes.append({"llvm": st.incompatible, "triton": commit, "role": "manual-fix", **result.to_dict()})
        if result.verdict != COMPATIBLE:
            st.save("manual-fix-rejected", commit=commit, why=result.reason)
            raise InputError(
                f"{commit[:12]} does not build against LLVM {st.incompatible[:12]}: {result.reason} "
                f"(log: {result.log})"
            )
        self.accept_fix(commit)
        return commit


def llvm_range(llvm: History, good: str, bad: str) -> list[str]:
    """LLVM commits in (good, bad] along the first-parent line, oldest first."""
    if good == bad:
        return []
    return list(llvm.candidates(good, bad, first_parent=True).order)


def read_llvm_hash(triton: History, commit: str) -> str:
    """The llvm-project commit `commit` pins (either pin file); InputError when none."""
    return read_llvm_pin(triton, commit).hash


def read_llvm_pin(triton: History, commit: str) -> LLVMPin:
    return require_pin(lambda path: triton.file_at(commit, path), f"at {commit[:12]}")
