"""What judges a commit (`TestSettings`): the user's test command, an oracle made from a trace,
or a person; and the TestSpec the recipes run for it.

Made by the command layer from --test, --repro, --kernel, --launch-id, the compile oracle's
options (--oracle, --check, --codegen-threshold, --compile-target, --from) and --manual.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from tritonbisect.builds.recipes import TestSpec
from tritonbisect.core.errors import InputError
from tritonbisect.core.step_args import check_test_command
from tritonbisect.oracles.kinds import OracleKind, compiles

if TYPE_CHECKING:  # pragma: no cover
    from tritonbisect.core.history import History


@dataclass
class TestSettings:
    command: str | None = None  # --test CMD as given
    repro: str | None = None  # --repro TRACE (or an IR file with --oracle ir)
    kernel: str | None = None
    launch_id: int | None = None
    oracle: str = OracleKind.RUNTIME.value  # --oracle: a bisecting kind of oracles/kinds.py
    check: list[str] = field(default_factory=list)  # --check codegen / compile-time
    codegen_thresholds: list[str] = field(default_factory=list)  # --codegen-threshold METRIC=LIMIT
    compile_target: str | None = None  # --compile-target BACKEND:ARCH
    ir_from: str = "source"  # --oracle ir --from ttir|ttgir: which recorded IR to compile
    compile_clock: str = "cpu"  # --compile-clock: what the compile-time check measures
    manual: bool = False  # no --test, or --manual: a person judges each commit

    def oracle_args(self) -> list[str]:
        """What the compile oracle's command adds for --check compile-time: its clock, and no
        launch limits (a kernel that compiles has a compile time, whether or not a GPU would
        launch it) unless codegen is checked too."""
        if "compile-time" not in self.check:
            return []
        out = [] if "codegen" in self.check else ["--no-limits"]
        return out + (["--compile-clock", self.compile_clock] if self.compile_clock != "cpu" else [])

    @property
    def wanted(self) -> bool:
        """Whether something judges the commits (a test, an oracle or a person)."""
        return bool(self.command or self.repro or self.manual)

    def spec(
        self,
        *,
        timeout: float | None,
        oracles_dir: Path,
        out_dir: Path | None = None,
        repo: Path | None = None,
        bad: str | None = None,
        history: History | None = None,
        cwd: Path | None = None,
    ) -> TestSpec:
        """The TestSpec of --test or --repro.

        --test: when the command starts with a script path (or `python`/`bash`/`sh` and a
        path), the script must exist in the repository at the bad commit (it then runs from
        the worktree) or on disk (its absolute path is used); otherwise InputError.
        --repro: the oracle's TestSpec, generated under `out_dir` (default: a new folder in
        `oracles_dir`).
        """
        if self.repro:
            return self._repro_spec(self.repro, timeout, out_dir, oracles_dir)
        if self.manual:
            from tritonbisect.session.manual import PROBE_COMMAND

            return TestSpec(command=PROBE_COMMAND)
        if not self.command:
            raise InputError("give the test to run: --test CMD (or --repro TRACE --kernel K)")
        return TestSpec(
            command=check_test_command(self.command, repo=repo, bad=bad, history=history, cwd=cwd)
        )

    def _ir_only_spec(self, trace: Path, timeout: float | None, out_dir: Path) -> TestSpec | None:
        """A kernel dump or an MLIR reproducer has IR alone: its compile oracle is the IR oracle,
        of the stage it holds (the TTGIR where there is one) unless --from names one. None for a
        source with Python (a trace, Inductor output code)."""
        from tritonbisect.oracles.compile.folder import compile_commands
        from tritonbisect.oracles.compile.ir_oracle import generate_ir_oracle
        from tritonbisect.traces.reader import load_trace

        tr = load_trace(trace)
        if not tr.ir_only:
            return None
        kernel = tr.kernel_named(self.kernel) if self.kernel else ""
        if not kernel:
            names = tr.kernels()
            if len(names) != 1:
                raise InputError(f"--repro needs --kernel K: {trace} has kernels {', '.join(names) or 'none'}")
            kernel = names[0]
        held = {st for c in tr.compilations.values() if c.name == kernel for st in c.ir}
        stage = self.ir_from if self.oracle == OracleKind.IR and self.ir_from in held else tr.default_stage(kernel)
        generate_ir_oracle(tr, kernel, out_dir, stage=stage, launch_id=self.launch_id, timeout=timeout,
                           target=self.compile_target)
        return compile_commands(out_dir, timeout=timeout, check=self.check, thresholds=self.codegen_thresholds,
                                extra=self.oracle_args())

    def _repro_spec(self, repro: str, timeout: float | None, out_dir: Path | None, oracles_dir: Path) -> TestSpec:
        from tritonbisect.traces.reader import reading

        with reading(repro):
            return self._oracle_of(repro, timeout, out_dir, oracles_dir)

    def _oracle_of(self, repro: str, timeout: float | None, out_dir: Path | None, oracles_dir: Path) -> TestSpec:
        from tritonbisect.oracles import repro_spec as bisect_test

        trace = Path(repro).expanduser()
        if not trace.exists():
            raise InputError(f"trace {trace} does not exist")
        if out_dir is None:
            oracles_dir.mkdir(parents=True, exist_ok=True)
            out_dir = Path(tempfile.mkdtemp(prefix="oracle-", dir=oracles_dir))
        if compiles(self.oracle) and trace.suffix not in (".ttir", ".ttgir"):
            spec = self._ir_only_spec(trace.resolve(), timeout, out_dir)
            if spec is not None:
                return spec
        if self.oracle == OracleKind.IR and self.ir_from != "source":
            from tritonbisect.oracles.compile.ir_oracle import ir_test_spec

            return ir_test_spec(trace.resolve(), self.kernel or "", self.launch_id, out_dir, stage=self.ir_from,
                                timeout=timeout, target=self.compile_target,
                                check=[c for c in self.check if c == "compile-time"], extra=self.oracle_args())
        if compiles(self.oracle):
            from tritonbisect.oracles.compile.folder import compile_test_spec

            return compile_test_spec(
                trace.resolve(), self.kernel or "", self.launch_id, out_dir, timeout=timeout,
                check=self.check, thresholds=self.codegen_thresholds, target=self.compile_target,
                extra=self.oracle_args(),
            )
        try:
            return bisect_test.repro_test_spec(
                trace.resolve(), self.kernel or "", self.launch_id, out_dir, timeout=timeout
            )
        except NotImplementedError:
            raise InputError(
                "--repro is not available in this build of tritonbisect (the reproducer "
                "oracle is not implemented yet); use --test CMD"
            ) from None
