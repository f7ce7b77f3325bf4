"""The settings of a bisect session (`BisectSettings`): a composition of one small dataclass per
concern, each defined beside the code that reads it, saved in session.json by
session/settings_file.py.

The command layer makes them from the command line (options/bisect_options.py `bisect_settings`);
the session, its phases and the executors read them and never import the commands. What
only shapes a command's output (--json) is not a setting and is not saved.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from tritonbisect.builds.recipes import TestSpec
from tritonbisect.core.outcome import METRIC_MODES, Policy, VerdictSettings
from tritonbisect.core.perf import PerfOptions, PerfSettings
from tritonbisect.core.step_args import default_workdir
from tritonbisect.executors.pool_settings import ExecutorSettings
from tritonbisect.session.flakiness import SearchSettings
from tritonbisect.session.follow_ups import FollowUps
from tritonbisect.session.judging import TestSettings
from tritonbisect.session.phase_hint import HintSettings

if TYPE_CHECKING:  # pragma: no cover
    from tritonbisect.core.history import History


@dataclass
class BisectSettings:
    workdir: Path = field(default_factory=default_workdir)  # sessions, worktrees, caches
    executor: ExecutorSettings = field(default_factory=ExecutorSettings)  # executors/pool_settings.py
    verdicts: VerdictSettings = field(default_factory=VerdictSettings)  # core/outcome.py
    perf: PerfOptions = field(default_factory=PerfOptions)  # core/perf.py: --regress perf
    test: TestSettings = field(default_factory=TestSettings)  # session/judging.py
    search: SearchSettings = field(default_factory=SearchSettings)  # session/flakiness.py
    hint: HintSettings = field(default_factory=HintSettings)  # session/phase_hint.py
    follow_ups: FollowUps = field(default_factory=FollowUps)  # session/follow_ups.py

    def policy(self) -> Policy:
        return Policy(regress=self.verdicts.regress, on_build_failure=self.verdicts.on_build_failure,
                      infra=self.verdicts.infra(),
                      perf=self.perf_settings())

    def perf_settings(self) -> PerfSettings | None:
        """How steps are judged under --regress perf or compile-time (None under any other mode)."""
        if self.verdicts.regress not in METRIC_MODES:
            return None
        return self.perf.resolve(self.executor.repeat, what=self.verdicts.regress)

    def test_spec(
        self,
        *,
        out_dir: Path | None = None,
        repo: Path | None = None,
        bad: str | None = None,
        history: History | None = None,
        cwd: Path | None = None,
    ) -> TestSpec:
        """The TestSpec of --test or --repro (see TestSettings.spec); an oracle is generated
        under `out_dir`, by default in a new folder of <workdir>/oracles."""
        return self.test.spec(timeout=self.executor.timeout, oracles_dir=self.workdir / "oracles",
                              out_dir=out_dir, repo=repo, bad=bad, history=history, cwd=cwd)
