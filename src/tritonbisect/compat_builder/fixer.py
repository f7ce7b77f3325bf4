"""The verify-and-retry fix loop for one incompatible LLVM commit.

Each attempt: the agent edits the compat worktree; the builder (never the model) commits the
result as ONE commit `compat fix: <summary>` on top of the commit being fixed; an attempt
that changed nothing is stale and fails without a build; otherwise the commit is
probe-built against the incompatible LLVM commit. A failed build's full log is kept as
<session>/attempt-N-build.log and its extracted errors plus the attempt's diff feed the next
prompt (the next attempt starts from the failed attempt's tree). After --max-attempts, or
with --ai none, the session waits for a person: state saved, instructions printed, exit 10.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tritonbisect.compat_builder import gitops, prompts, provenance
from tritonbisect.compat_builder.agent import DEFAULT_MODEL, AgentError
from tritonbisect.compat_builder.probe import COMPATIBLE, SKIP, Prober
from tritonbisect.compat_builder.session_state import MANUAL, MapState
from tritonbisect.core.clock import now_iso
from tritonbisect.core.errors import EXIT_MANUAL_FIX_NEEDED, AbortError, TritonBisectError
from tritonbisect.core.history import History
from tritonbisect.domains.triton.llvm_pin import write_pin


class ManualFixNeeded(TritonBisectError):
    exit_code = EXIT_MANUAL_FIX_NEEDED


def manual_instructions(state: MapState, workdir_hint: str = "") -> str:
    base = state.current_triton
    llvm = state.incompatible or ""
    failed = [a for a in state.attempts if a.get("log")]
    log = failed[-1]["log"] if failed else state.incompatible_log
    lines = [
        f"manual fix needed: Triton {base[:12]} does not build against LLVM {llvm[:12]}.",
        f"  why:      {state.events[-1].get('why', '') if state.events else ''}",
        f"  errors:   {log}",
        f"  worktree: {state.worktree} (branch {state.branch}, at {base[:12]})",
    ]
    last_diff = [a["diff"] for a in state.attempts if a.get("diff")]
    if last_diff:
        lines.append(f"  last AI attempt's diff: {last_diff[-1]}")
    lines += [
        "Then:",
        f"  1. cd {state.worktree}",
        f"  2. change the sources so that they build against LLVM {llvm} (see the errors above)",
        "  3. git commit -am 'compat fix: <what you changed>'",
        f"  4. compat-builder resume --fix-commit $(git -C {state.worktree} rev-parse HEAD) "
        f"{state.id}{workdir_hint}",
    ]
    return "\n".join(lines)


class Fixer:
    def __init__(
        self,
        state: MapState,
        prober: Prober,
        agent,  # AnthropicAgent | ClaudeCliAgent | None (--ai none)
        *,
        log: Callable[[str], None] = lambda m: None,
        workdir_hint: str = "",
    ) -> None:
        self.state = state
        self.prober = prober
        self.agent = agent
        self.log = log
        self.workdir_hint = workdir_hint

    @property
    def worktree(self) -> Path:
        return Path(self.state.worktree)

    def _manual(self, why: str) -> ManualFixNeeded:
        st = self.state
        gitops.reset_hard(self.worktree, st.current_triton)
        st.phase = MANUAL
        st.save("manual-fix-needed", why=why)
        return ManualFixNeeded(manual_instructions(st, self.workdir_hint))

    def fix(self) -> str:
        """Run attempts until one builds against state.incompatible; returns the fix commit."""
        st = self.state
        base = st.current_triton
        if self.agent is None:
            raise self._manual("--ai none: no AI fixer")
        while True:
            last = st.current_attempt()
            if last is not None and last["status"] == "started":
                # interrupted mid-attempt: run it again from where it started
                st.attempts.pop()
            if len(st.attempts) >= st.max_attempts:
                raise self._manual(f"{len(st.attempts)} AI attempt(s) did not produce a fix that builds")
            commit = self._attempt(base, len(st.attempts) + 1)
            if commit is not None:
                return commit
            # checked on this run's attempt only, so that `resume --ai ...` after the cause
            # (a bad key, an unknown model) is mended gets a new try
            last = st.current_attempt()
            if last is not None and last["status"] == "agent-error" and last.get("fatal"):
                raise self._manual(f"the AI fixer cannot run: {last['reason']}")

    def _attempt(self, base: str, n: int) -> str | None:
        st = self.state
        assert st.incompatible is not None  # an attempt fixes the LLVM found incompatible
        session = st.dir
        previous = st.current_attempt()
        start_head = previous["commit"] if previous and previous.get("commit") else base
        gitops.reset_hard(self.worktree, start_head)
        record: dict[str, Any] = {"n": n, "status": "started", "started": now_iso(), "start_head": start_head,
                  "ai": st.ai, "usage": {}}
        st.attempts.append(record)
        st.save("attempt-started", attempt=n)
        self.log(f"fix attempt {n}/{st.max_attempts} for LLVM {st.incompatible[:12]} ({st.ai})")

        prompt = prompts.render(self._context(base, n, previous))
        (session / f"attempt-{n}-prompt.md").write_text(prompt.analysis + "\n\n" + prompt.execution, encoding="utf-8")
        try:
            result = self.agent.run(self.worktree, prompt, transcript=session / f"attempt-{n}-transcript.json")
        except AgentError as exc:
            gitops.reset_hard(self.worktree, start_head)
            record.update(status="agent-error", reason=str(exc), fatal=exc.fatal, finished=now_iso())
            st.save("attempt-failed", attempt=n, why=str(exc))
            self.log(f"attempt {n}: {exc}")
            return None
        record["usage"] = result.usage
        record["summary"] = result.summary
        summary = result.summary or f"adapt to LLVM {st.incompatible[:12]}"
        files = gitops.changed_files(self.worktree, base)
        model = provenance.model_name(st.ai, st.ai_model, DEFAULT_MODEL if st.ai == "anthropic" else "default")
        message = provenance.commit_message(summary, model=model, llvm=st.incompatible or "", files=files)
        commit = gitops.commit_all(self.worktree, base, message)
        if commit is None or gitops.tree_of(self.worktree, commit) == gitops.tree_of(self.worktree, start_head):
            gitops.reset_hard(self.worktree, start_head)
            record.update(status="stale", reason="the attempt changed nothing", finished=now_iso())
            st.save("attempt-failed", attempt=n, why="stale: no change")
            self.log(f"attempt {n}: stale (no change)")
            return None
        if write_pin(self.worktree, st.incompatible) is not None:
            # the fix builds against this LLVM: its pin says so, in the era's own file, so
            # that a `tritonbisect triton --llvm-dir` over the fixes builds the right LLVM
            # (the same message: the pin is the builder's, the files named are the model's)
            commit = gitops.commit_all(self.worktree, base, message) or commit
        diff_path = session / f"attempt-{n}.diff"
        diff_path.write_text(gitops.diff(self.worktree, base, commit), encoding="utf-8")
        record.update(commit=commit, diff=str(diff_path), model=model, files=files,
                      build_scripts=provenance.build_scripts(files))
        if record["build_scripts"]:
            self.log(f"attempt {n} changes build scripts ({', '.join(record['build_scripts'])}): "
                     "flagged for review; built in the sandbox")
        st.save("attempt-committed", attempt=n, commit=commit)

        probe = self.prober.probe(commit, st.incompatible, session / "probes" / f"attempt-{n}", clean=True)
        st.probes.append({"llvm": st.incompatible, "triton": commit, "role": f"attempt-{n}", **probe.to_dict()})
        if probe.verdict == COMPATIBLE:
            record.update(status="accepted", finished=now_iso())
            return commit
        if probe.verdict == SKIP:
            raise AbortError(f"LLVM {st.incompatible[:12]} no longer builds: {probe.reason}")
        full_log = session / f"attempt-{n}-build.log"
        if probe.log is not None and Path(probe.log).is_file():
            shutil.copyfile(probe.log, full_log)  # the whole log, never truncated
        else:
            full_log.write_text(probe.reason + "\n", encoding="utf-8")
        record.update(status="failed", reason=probe.reason, log=str(full_log), finished=now_iso())
        st.save("attempt-failed", attempt=n, why=probe.reason)
        self.log(f"attempt {n}: still does not build ({probe.reason}); log {full_log}")
        return None

    def _context(self, base: str, n: int, previous: dict | None) -> prompts.FixContext:
        st = self.state
        assert st.incompatible is not None  # set before any attempt
        llvm_repo = Path(st.llvm_repo)
        triton_repo = Path(st.triton_repo)
        failed_log = previous.get("log") if previous and previous.get("status") == "failed" else None
        log_path = failed_log or st.incompatible_log or ""
        log_text = Path(log_path).read_text(encoding="utf-8", errors="replace") if log_path and Path(log_path).is_file() else ""
        trees = [p["source"] for p in st.probes if p.get("source")]
        errors = prompts.extract_errors(log_text, [*trees[-1:], str(self.worktree)])
        diff, note = prompts.llvm_header_diff(History(llvm_repo), st.incompatible, prompts.triton_includes(self.worktree))
        ref, ref_note = prompts.reference_fix(triton_repo, st.bump, prompts.failing_files(errors, self.worktree))
        previous_diff = None
        if previous is not None:
            previous_diff = Path(previous["diff"]).read_text(encoding="utf-8") if previous.get("diff") else ""
        return prompts.FixContext(
            llvm_commit=st.incompatible,
            llvm_subject=History(llvm_repo).commit_info(st.incompatible).subject,
            llvm_diff=diff,
            llvm_diff_note=note,
            triton_commit=base,
            errors=errors,
            log_path=log_path,
            reference_fix=ref,
            reference_note=ref_note,
            previous_diff=previous_diff,
            previous_attempt=previous["n"] if previous else None,
            attempt=n,
        )
