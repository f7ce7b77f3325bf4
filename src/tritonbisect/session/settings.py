"""The validated settings of a bisect (`BisectSettings`), saved in session.json.

Made from the command line by commands/options.py (`bisect_settings`); read by the session,
its phases and executors, which must not import the commands.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tritonbisect.builds.recipes import TestSpec
from tritonbisect.core.errors import InputError
from tritonbisect.core.outcome import Policy
from tritonbisect.core.perf import (
    DEFAULT_SIGNIFICANCE,
    DEFAULT_THRESHOLD,
    MAX_SAMPLES_FACTOR,
    PerfSettings,
)
from tritonbisect.core.step_args import check_test_command, default_workdir


@dataclass
class BisectSettings:
    """Validated values of the common options; saved in session.json (`to_dict`)."""

    jobs: int = 1
    repeat: int = 1
    timeout: float | None = None
    env: dict[str, str] = field(default_factory=dict)
    on_build_failure: str = "skip"
    regress: str = "fail"
    first_parent: bool = False
    workdir: Path = field(default_factory=default_workdir)
    json: bool = False
    test: str | None = None  # --test CMD as given
    repro: str | None = None  # --repro TRACE
    kernel: str | None = None
    launch_id: int | None = None
    # --- compile oracle (issue 8): --oracle compile [--check codegen] [--codegen-threshold M=L] [--compile-target T]
    oracle: str = "runtime"
    check: list[str] = field(default_factory=list)
    codegen_thresholds: list[str] = field(default_factory=list)
    compile_target: str | None = None
    ir_from: str = "source"  # --oracle ir --from ttir|ttgir (issue 14): which recorded IR to compile
    narrow: bool = False  # --narrow (issue 14): after the culprit, name the compiler pass it changed
    reduce: bool = False  # --reduce: after the culprit, shrink the oracle with it and its parent
    reduce_levels: list[str] = field(default_factory=lambda: ["source", "ir", "inputs"])  # --reduce-level
    reduce_jobs: int = 2  # --reduce-jobs
    reduce_timeout: float = 120.0  # --reduce-timeout
    # where steps run (issue 11): see the "executor" block below
    executor: str = "local"
    ray_address: str = "auto"
    build_resources: dict[str, float] | None = None
    test_resources: dict[str, float] | None = None
    cache_dir: str | None = None  # a directory, or an object store URL (--cache-url s3://...)
    repo_url: str | None = None  # with --executor ray: where nodes fetch the repository
    # --- issue 12: flaky tests and judging by hand (session/phase_flaky.py, session/manual.py)
    flaky: str = "detect"  # --flaky auto|detect|off
    flake_rate: list[float] | None = None  # --flake-rate P[,Q]: fixed error rates
    confidence: float | None = None  # --confidence; None: 0.95, or 0.99 with --flaky auto / --flake-rate
    max_tests: int | None = None  # --max-tests: search tests allowed (flake-aware search)
    manual: bool = False  # no --test, or --manual: a person judges each commit
    # --prefer-pass NAME / --prefer-files GLOB: a prior on the commits touching those files
    # (search/prior.py, session/phase_hint.py)
    prefer_pass: list[str] = field(default_factory=list)
    prefer_files: list[str] = field(default_factory=list)
    # --regress perf (issue 10): see the "performance regressions" block below
    threshold: float | None = None
    significance: float | None = None
    max_samples: int | None = None
    higher_is_better: bool = False
    # --verify-revert: the culprit reverted at the bad commit, and any culprit it leaves
    # behind (session/revert_check.py)
    verify_revert: bool = False
    sandbox: bool = False  # --sandbox: every build and test in a sandbox (builds/sandbox.py)

    def policy(self) -> Policy:
        return Policy(regress=self.regress, on_build_failure=self.on_build_failure, perf=self.perf_settings())

    def perf_settings(self) -> PerfSettings | None:
        """How steps are judged under --regress perf (None under any other mode)."""
        return perf_settings_of(self)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["workdir"] = str(self.workdir)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> BisectSettings:
        known = {f for f in cls.__dataclass_fields__}
        values = {k: v for k, v in data.items() if k in known}
        if "workdir" in values:
            values["workdir"] = Path(values["workdir"])
        return cls(**values)

    @property
    def wants_test(self) -> bool:
        return bool(self.test or self.repro or self.manual)

    def test_spec(
        self,
        *,
        out_dir: Path | None = None,
        repo: Path | None = None,
        bad: str | None = None,
        history: Any = None,
        cwd: Path | None = None,
    ) -> TestSpec:
        """The TestSpec of --test or --repro.

        --test: when the command starts with a script path (or `python`/`bash`/`sh` and a
        path), the script must exist in the repository at the bad commit (it then runs from
        the worktree) or on disk (its absolute path is used); otherwise InputError.
        --repro: the oracle's TestSpec (contract G), generated under `out_dir`.
        """
        if self.repro:
            return self._repro_spec(out_dir)
        if self.manual:
            from tritonbisect.session.manual import PROBE_COMMAND

            return TestSpec(command=PROBE_COMMAND)
        if not self.test:
            raise InputError("give the test to run: --test CMD (or --repro TRACE --kernel K)")
        return TestSpec(
            command=check_test_command(self.test, repo=repo, bad=bad, history=history, cwd=cwd)
        )

    def _repro_spec(self, out_dir: Path | None) -> TestSpec:
        from tritonbisect.oracles import repro_spec as bisect_test

        trace = Path(self.repro).expanduser()  # type: ignore[arg-type]
        if not trace.exists():
            raise InputError(f"trace {trace} does not exist")
        if out_dir is None:
            import tempfile

            out_dir = Path(tempfile.mkdtemp(prefix="oracle-", dir=_ensure(self.workdir / "oracles")))
        if self.oracle == "ir" and self.ir_from != "source":
            from tritonbisect.oracles.compile.ir_oracle import ir_test_spec

            return ir_test_spec(trace.resolve(), self.kernel or "", self.launch_id, out_dir, stage=self.ir_from,
                                timeout=self.timeout, target=self.compile_target)
        if self.oracle in ("compile", "ir"):
            from tritonbisect.oracles.compile.folder import compile_test_spec

            return compile_test_spec(
                trace.resolve(), self.kernel or "", self.launch_id, out_dir, timeout=self.timeout,
                check=self.check, thresholds=self.codegen_thresholds, target=self.compile_target,
            )
        try:
            return bisect_test.repro_test_spec(
                trace.resolve(), self.kernel or "", self.launch_id, out_dir, timeout=self.timeout
            )
        except NotImplementedError:
            raise InputError(
                "--repro is not available in this build of tritonbisect (the reproducer "
                "oracle is not implemented yet); use --test CMD"
            ) from None


def _ensure(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


def perf_from_values(values: Mapping[str, Any], repeat: int) -> PerfSettings:
    return PerfSettings(
        samples=repeat,
        max_samples=values.get("max_samples") or repeat * MAX_SAMPLES_FACTOR,
        threshold=DEFAULT_THRESHOLD if values.get("threshold") is None else values["threshold"],
        significance=values.get("significance") or DEFAULT_SIGNIFICANCE,
        higher_is_better=bool(values.get("higher_is_better")),
    )


def perf_settings_of(settings: BisectSettings) -> PerfSettings | None:
    if settings.regress != "perf":
        return None
    return perf_from_values(asdict(settings), settings.repeat)
