"""Options shared by every bisecting command (`run`, `triton`, `llvm`, `torch`, `pairs`).

    @click.command()
    @common_bisect_options                 # with --test / --repro
    def triton(**kwargs):
        settings = bisect_settings(**kwargs)
        spec = settings.test_spec(out_dir=..., repo=..., bad=..., history=...)

`@common_bisect_options(test=False)` leaves out --test/--repro/--kernel/--launch-id.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import click

from tritonbisect.bisect.outcome import BUILD_FAILURE_MODES, REGRESS_MODES, Policy
from tritonbisect.bisect.perf import (
    DEFAULT_SAMPLES,
    DEFAULT_SIGNIFICANCE,
    DEFAULT_THRESHOLD,
    MAX_SAMPLES_FACTOR,
    PerfSettings,
    parse_threshold,
)
from tritonbisect.build.recipes import TestSpec
from tritonbisect.errors import InputError

F = TypeVar("F", bound=Callable[..., Any])

HOME_ENV = "TRITONBISECT_HOME"


def default_workdir() -> Path:
    """TRITONBISECT_HOME, else the platform's user cache dir for tritonbisect."""
    env = os.environ.get(HOME_ENV)
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("tritonbisect"))


def resolve_workdir(value: str | Path | None) -> Path:
    return (Path(value).expanduser() if value else default_workdir()).resolve()


def parse_env(pairs: tuple[str, ...] | list[str] | None) -> dict[str, str]:
    env: dict[str, str] = {}
    for item in pairs or ():
        key, sep, value = item.partition("=")
        if not sep or not key or not key.replace("_", "a").isalnum() or key[0].isdigit():
            raise InputError(f"--env expects KEY=VALUE, got {item!r}")
        env[key] = value
    return env


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
    # --regress perf (issue 10): see the "performance regressions" block below
    threshold: float | None = None
    significance: float | None = None
    max_samples: int | None = None
    higher_is_better: bool = False

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
        return bool(self.test or self.repro)

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
        if not self.test:
            raise InputError("give the test to run: --test CMD (or --repro TRACE --kernel K)")
        return TestSpec(
            command=check_test_command(self.test, repo=repo, bad=bad, history=history, cwd=cwd)
        )

    def _repro_spec(self, out_dir: Path | None) -> TestSpec:
        from tritonbisect.tritonparse import bisect_test

        trace = Path(self.repro).expanduser()  # type: ignore[arg-type]
        if not trace.exists():
            raise InputError(f"trace {trace} does not exist")
        if out_dir is None:
            import tempfile

            out_dir = Path(tempfile.mkdtemp(prefix="oracle-", dir=_ensure(self.workdir / "oracles")))
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


_INTERPRETERS = {"python", "python3", "bash", "sh", "zsh"}


def _looks_like_path(word: str) -> bool:
    return "/" in word or word.endswith((".py", ".sh"))


def check_test_command(
    command: str,
    *,
    repo: Path | None = None,
    bad: str | None = None,
    history: Any = None,
    cwd: Path | None = None,
) -> str:
    """Validate the script a --test command names; return the command to run in a worktree.

    A script found in the repository at the bad commit is kept as given (it runs from the
    worktree, at each commit). A script only on disk gets its absolute path. A script found
    in neither is an InputError.
    """
    try:
        words = shlex.split(command)
    except ValueError as exc:
        raise InputError(f"--test {command!r} is not a valid shell command: {exc}") from None
    if not words:
        raise InputError("--test is empty")
    index = 0
    if words[0] in _INTERPRETERS or words[0].startswith("python3."):
        index = 1
        while index < len(words) and words[index].startswith("-"):
            if words[index] in ("-m", "-c"):
                return command  # a module or inline code: nothing to check
            index += 1
        if index >= len(words):
            return command
    word = words[index]
    if not _looks_like_path(word) or word.startswith("$"):
        return command
    cwd = (cwd or Path.cwd()).resolve()
    on_disk = Path(word).expanduser()
    on_disk = on_disk if on_disk.is_absolute() else cwd / on_disk
    if history is not None and bad is not None and repo is not None and not Path(word).is_absolute():
        repo_root = Path(getattr(history, "root", repo)).resolve()
        try:
            rel = os.path.relpath(on_disk.resolve() if on_disk.exists() else on_disk, repo_root)
        except ValueError:
            rel = word
        if not rel.startswith(".."):
            rel_norm = os.path.normpath(rel)
            if history.file_at(bad, rel_norm) is not None:
                # runs from the worktree; make it relative to the repository root
                if os.path.normpath(word) != rel_norm:
                    return _replace_word(command, words, index, "./" + rel_norm)
                return command
    if on_disk.exists():
        if Path(word).is_absolute():
            return command
        return _replace_word(command, words, index, str(on_disk.resolve()))
    where = f" in {repo} at {bad[:12]}" if repo is not None and bad else ""
    raise InputError(f"test script {word} not found{where} nor on disk")


def _replace_word(command: str, words: list[str], index: int, new: str) -> str:
    words = list(words)
    words[index] = new
    return shlex.join(words)


def _validate_positive_int(name: str) -> Callable[[click.Context, click.Parameter, Any], Any]:
    def check(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        if value is not None and value < 1:
            raise click.BadParameter(f"{name} must be at least 1")
        return value

    return check


def _add_options(f: F, options: list[Callable[[F], F]]) -> F:
    for option in reversed(options):
        f = option(f)
    return f


def common_bisect_options(f: F | None = None, *, test: bool = True) -> Any:
    """Click decorator adding the shared bisect options (see module docstring)."""

    def decorate(func: F) -> F:
        options: list[Callable[[F], F]] = []
        if test:
            options += [
                click.option("--test", "test", metavar="CMD", help="Test command (bash), run in the checkout of each commit: exit 0 = pass."),
                click.option("--repro", metavar="TRACE", help="Use the reproducer oracle of a tritonparse trace as the test (instead of --test)."),
                click.option("--kernel", metavar="K", help="With --repro: the kernel to reproduce."),
                click.option("--launch-id", type=int, metavar="I", help="With --repro: which launch of the kernel (default: the first)."),
            ]
        options += [
            click.option("--jobs", "-j", type=int, default=1, show_default=True, callback=_validate_positive_int("--jobs"), help="Workers testing commits in parallel, each in its own worktree."),
            click.option("--repeat", type=int, default=None, callback=_validate_positive_int("--repeat"), help="Run each test N times; majority verdict, disagreement recorded as flaky (default 1; with --regress perf, 5 samples per step)."),
            click.option("--timeout", type=float, metavar="S", help="Per-test timeout in seconds (kills the whole process group)."),
            click.option("--env", "env", multiple=True, metavar="K=V", help="Environment variable for builds and tests (repeatable)."),
            click.option("--on-build-failure", type=click.Choice(BUILD_FAILURE_MODES), default="skip", show_default=True, help="What a commit that does not build counts as."),
            click.option("--regress", type=click.Choice(REGRESS_MODES), default="fail", show_default=True, help="Which outcome is the regression; 'fixed' finds the commit that fixed it."),
            click.option("--first-parent", is_flag=True, help="Follow only the first parent of merges."),
            click.option("--workdir", type=click.Path(file_okay=False, path_type=Path), help="Where sessions, worktrees and caches live (default: $TRITONBISECT_HOME or the user cache dir)."),
            click.option("--json", "json_out", is_flag=True, help="Print one JSON object with the result at the end."),
            *PERF_OPTIONS,
        ]
        return _add_options(func, options)

    if f is not None:
        return decorate(f)
    return decorate


def bisect_settings(**kwargs: Any) -> BisectSettings:
    """Validated BisectSettings from the keyword arguments of a command using the options.

    Unknown keys (the command's own options) are ignored.
    """
    test = kwargs.get("test")
    repro = kwargs.get("repro")
    kernel = kwargs.get("kernel")
    launch_id = kwargs.get("launch_id")
    if test and repro:
        raise InputError("--test and --repro are mutually exclusive; give one")
    if (kernel or launch_id is not None) and not repro:
        raise InputError("--kernel and --launch-id go with --repro TRACE")
    if repro and not kernel:
        raise InputError("--repro needs --kernel K (the kernel to reproduce)")
    timeout = kwargs.get("timeout")
    if timeout is not None and timeout <= 0:
        raise InputError("--timeout must be a positive number of seconds")
    jobs = kwargs.get("jobs") or 1
    regress = kwargs.get("regress") or "fail"
    repeat = kwargs.get("repeat") or (DEFAULT_SAMPLES if regress == "perf" else 1)
    if jobs < 1 or repeat < 1:
        raise InputError("--jobs and --repeat must be at least 1")
    perf = perf_option_values(kwargs, regress=regress, repeat=repeat)
    return BisectSettings(
        jobs=jobs,
        repeat=repeat,
        timeout=timeout,
        env=parse_env(kwargs.get("env")),
        on_build_failure=kwargs.get("on_build_failure") or "skip",
        regress=regress,
        first_parent=bool(kwargs.get("first_parent")),
        workdir=resolve_workdir(kwargs.get("workdir")),
        json=bool(kwargs.get("json_out") or kwargs.get("json")),
        test=test,
        repro=repro,
        kernel=kernel,
        launch_id=launch_id,
        **perf,
    )


# --- performance regressions (issue 10: --regress perf) ----------------------------------
# A step runs --repeat times (default 5) and reports a metric each run; bisect.perf judges
# its samples against the good endpoint's. These options only go with --regress perf.

PERF_OPTIONS = [
    click.option("--threshold", metavar="PCT", help="With --regress perf: how much worse than the good endpoint a commit must be to be bad, e.g. 5% (default 5%)."),
    click.option("--significance", type=float, metavar="P", help="With --regress perf: the significance of the one-sided Mann-Whitney U tests (default 0.01)."),
    click.option("--max-samples", type=int, metavar="N", help="With --regress perf: samples a step may take before it is called flaky; the good endpoint takes this many (default 4 x --repeat)."),
    click.option("--higher-is-better", is_flag=True, help="With --regress perf: the metric is a rate (higher is better), not a time."),
]


def perf_option_values(kwargs: Mapping[str, Any], *, regress: str, repeat: int) -> dict[str, Any]:
    """The validated perf fields of BisectSettings; InputError for a misuse, in one line."""
    given = [
        name for name, key in (("--threshold", "threshold"), ("--significance", "significance"),
                               ("--max-samples", "max_samples"), ("--higher-is-better", "higher_is_better"))
        if kwargs.get(key) not in (None, False)
    ]
    if regress != "perf":
        if given:
            raise InputError(f"{given[0]} goes with --regress perf")
        return {}
    try:
        threshold = parse_threshold(kwargs["threshold"]) if kwargs.get("threshold") is not None else None
    except ValueError as exc:
        raise InputError(str(exc)) from None
    values = {
        "threshold": threshold,
        "significance": kwargs.get("significance"),
        "max_samples": kwargs.get("max_samples"),
        "higher_is_better": bool(kwargs.get("higher_is_better")),
    }
    try:
        _perf_from(values, repeat)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    return values


def _perf_from(values: Mapping[str, Any], repeat: int) -> PerfSettings:
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
    return _perf_from(asdict(settings), settings.repeat)
