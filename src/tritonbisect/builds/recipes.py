"""How a commit becomes something testable: the Recipe protocol shared by every domain.

The step runner (`executors.runner`) drives a recipe per step in a worker's own worktree:

    prepared = recipe.prepare(commit, ctx)      # build (or fetch from cache) and install
    run = recipe.test(commit, ctx)              # run the test once (repeated for --repeat)

Concrete recipes live with their domains (`domains/<name>/recipe.py`) and are listed by
name in `builds.recipe_table.RECIPES`, from which `recipe_from_config` rebuilds a recipe
saved in session.json (`resume`, a Ray node, the revert check).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from tritonbisect.builds.recipe_table import RECIPES
from tritonbisect.core.errors import InputError
from tritonbisect.core.outcome import Kind
from tritonbisect.core.process import CancelToken
from tritonbisect.core.refs import resolve


@dataclass(frozen=True)
class TestSpec:
    """What to run as the test of a step.

    `command` runs in the worktree through the shell. `record_command`, when set, runs once at
    the good endpoint before its first test (e.g. an oracle recording its golden output).
    A test may write a structured result (JSON with a "status") to the path in the
    environment variable TRITONBISECT_RESULT; the classifier reads it.
    """

    command: str
    record_command: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"command": self.command, "record_command": self.record_command}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TestSpec:
        return cls(command=data["command"], record_command=data.get("record_command"))


@dataclass
class StepContext:
    """Where and how one step runs. Built by the runner for each step."""

    worktree: Path  # the worker's own checkout, already at the commit
    log_dir: Path  # per-step folder in the session for logs and results
    worker: int
    env: dict[str, str] = field(default_factory=dict)  # extra variables (--env) for build+test
    timeout: float | None = None  # per-test timeout in seconds
    workdir: Path | None = None  # the tool's workdir (caches, venvs, TRITON_HOME)
    cache_dir: str | None = None  # --cache-dir: the artifact cache (default <workdir>/cache)
    workers: int = 1  # steps that may build at once on this machine (they share its CPUs)
    sandbox: bool = False  # --sandbox: builds and tests run in builds/sandbox.py's sandbox
    # the step's cancel token: every process a recipe starts runs under it, so a cancelled
    # step or Ctrl-C kills them (None outside a step: the process gets its own)
    token: CancelToken | None = None


@dataclass
class PrepareResult:
    """Result of building+installing a commit. kind is PASS (ok), BUILD_FAILED or INFRA."""

    kind: Kind
    reason: str = ""
    cached: bool = False  # True when nothing was compiled (artifact cache hit / failure record)
    seconds: float = 0.0
    log: Path | None = None
    published: bool = False  # a published wheel was installed (nothing built): builds/published.py
    kept: bool = False  # the build a worker's checkout still held from an earlier step (nothing built)
    built: tuple[str, ...] = ()  # what this step compiled ("llvm", "triton", "codegen-amd", ...)


@dataclass
class TestRun:
    """One execution of the test."""

    returncode: int | None
    seconds: float
    log: Path
    timed_out: bool = False
    result: dict | None = None  # parsed $TRITONBISECT_RESULT, when the test wrote one

    @property
    def signal(self) -> int | None:
        return -self.returncode if self.returncode is not None and self.returncode < 0 else None


def test_files(spec: TestSpec, ctx: StepContext, *, record: bool) -> tuple[str, Path, Path]:
    """The command a test run executes, its log and its $TRITONBISECT_RESULT path.

    Each run of a step gets the next free test-<n>.log (repeats keep every log); a stale
    result file is removed so a test that writes none is not read as the last one's."""
    if record:
        command = spec.record_command or "true"
        log = ctx.log_dir / "record.log"
        result_path = ctx.log_dir / "record-result.json"
    else:
        command = spec.command
        n = 1
        while (ctx.log_dir / f"test-{n}.log").exists():
            n += 1
        log = ctx.log_dir / f"test-{n}.log"
        result_path = ctx.log_dir / f"result-{n}.json"
    ctx.log_dir.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileNotFoundError):
        result_path.unlink()
    return command, log, result_path


class Recipe(Protocol):
    """How a commit becomes something testable. Every recipe declares all of it: its name (as
    session.json keeps it), the test it runs (None for one that runs none of its own), and
    whether its builds go to the artifact cache (a re-test then costs no build)."""

    name: str

    @property
    def test_spec(self) -> TestSpec | None: ...

    @property
    def caches_builds(self) -> bool: ...

    def config(self) -> dict[str, Any]:
        """JSON-able config; `recipe_from_config(name, config)` must rebuild an equal recipe."""

    def prepare(self, commit: str, ctx: StepContext) -> PrepareResult:
        """Build (or take from cache) and install `commit`, whose tree is in ctx.worktree."""

    def test(self, commit: str, ctx: StepContext, *, record: bool = False) -> TestRun:
        """Run the test once. With record=True run TestSpec.record_command (if any) instead."""


RecipeFactory = Callable[[Mapping[str, Any]], Recipe]


def recipe_from_config(name: str, config: Mapping[str, Any]) -> Recipe:
    """Rebuild a recipe saved in a session, importing only its own module."""
    try:
        ref = RECIPES[name]
    except KeyError:
        raise InputError(f"session uses unknown recipe {name!r}; is this tritonbisect too old?") from None
    factory: RecipeFactory = resolve(ref)
    return factory(config)


def test_spec_of(recipe: Recipe) -> TestSpec | None:
    """The TestSpec a recipe runs (None for one that runs none of its own)."""
    return recipe.test_spec
