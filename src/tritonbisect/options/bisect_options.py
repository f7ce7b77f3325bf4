"""Options shared by every bisecting command (`run`, `triton`, `llvm`, `torch`, `pairs`, ...).

    @click.command()
    @common_bisect_options                 # with --test / --repro
    def triton(**kwargs):
        settings = bisect_settings(**kwargs)   # a session.settings.BisectSettings
        spec = settings.test_spec(out_dir=..., repo=..., bad=..., history=...)
        ... execute(session, json_out=wants_json(kwargs))   # --json is output, not a setting

`@common_bisect_options(test=False)` leaves out --test/--repro/--kernel/--launch-id.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import click

from tritonbisect.core.errors import InputError
from tritonbisect.core.outcome import (
    BUILD_FAILURE_MODES,
    METRIC_MODES,
    REGRESS_MODES,
    VerdictSettings,
    check_infra_pattern,
)
from tritonbisect.core.perf import DEFAULT_SAMPLES, PerfOptions, parse_threshold
from tritonbisect.core.secrets import hide_env

# click-free helpers live in core/step_args.py (`tritonbisect step` imports them without click)
from tritonbisect.core.step_args import HOME_ENV as HOME_ENV
from tritonbisect.core.step_args import check_test_command as check_test_command
from tritonbisect.core.step_args import default_workdir as default_workdir
from tritonbisect.core.step_args import parse_env as parse_env
from tritonbisect.core.step_args import parse_pass_env
from tritonbisect.core.step_args import resolve_workdir as resolve_workdir
from tritonbisect.executors.pool_settings import ExecutorSettings
from tritonbisect.options.alias import hidden_alias
from tritonbisect.oracles.kinds import BISECT_CHOICES, OracleKind, compiles, oracle_kind
from tritonbisect.oracles.kinds import DEFAULT as DEFAULT_ORACLE
from tritonbisect.session.flakiness import SearchSettings
from tritonbisect.session.follow_ups import FollowUps, ReduceOptions
from tritonbisect.session.judging import TestSettings
from tritonbisect.session.phase_hint import HintSettings
from tritonbisect.session.settings import BisectSettings as BisectSettings

F = TypeVar("F", bound=Callable[..., Any])

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


# --- executor: where steps run, and the artifact cache they share ---------------------------
# Part of every bisector's options (common_bisect_options); compat-builder's probes take the
# same block with `executor_options(test_resources=False)`.


def executor_options(f: F | None = None, *, test_resources: bool = True) -> Any:
    """Click decorator: --executor, --ray-address, --build-resources, --test-resources,
    --cache-dir (validated by `executor_settings`)."""

    def decorate(func: F) -> F:
        options: list[Callable[[F], F]] = [
            click.option("--executor", type=click.Choice(["local", "ray"]), default="local", show_default=True, help="Where steps run: worker threads here, or Ray actors on a cluster (pip install 'tritonbisect[ray]')."),
            click.option("--ray-address", metavar="auto|HOST:PORT|local", help="With --executor ray: the cluster to join (auto: the one `ray start` made here), or local: a private one on this machine, stopped afterwards. Default: auto."),
            click.option("--build-resources", metavar="JSON", help="With --executor ray: what a build needs, e.g. '{\"CPU\": 32}' or '{\"builder\": 1}' (default {\"CPU\": 1})."),
        ]
        if test_resources:
            options.append(click.option("--repo-url", metavar="URL", help="With --executor ray: where nodes fetch the bisected repository themselves (e.g. its remote); without it, the driver sends it through Ray as a git bundle, once per node."))
            options.append(click.option("--cache-url", metavar="s3://BUCKET/PREFIX", help="An object-store artifact cache (any S3-compatible endpoint: AWS_ENDPOINT_URL) shared by every node and by later sessions; instead of --cache-dir (pip install 'tritonbisect[s3]')."))
            options.append(click.option("--test-resources", metavar="JSON", help="With --executor ray: what a test needs, e.g. '{\"GPU\": 1}'. When it differs from --build-resources, builds and tests run on different workers and the artifact moves through the cache."))
        options.append(click.option("--cache-dir", metavar="DIR", help="The artifact cache (default <workdir>/cache); for a Ray cluster, a directory every node reaches (NFS or similar)."))
        return _add_options(func, options)

    if f is not None:
        return decorate(f)
    return decorate


def executor_settings(
    kwargs: Mapping[str, Any],
    *,
    jobs: int = 1,
    repeat: int = 1,
    timeout: float | None = None,
    env: dict[str, str] | None = None,
    sandbox: bool = False,
    pass_env: list[str] | None = None,
) -> ExecutorSettings:
    """The ExecutorSettings of the executor options' values (validated) and of the step
    options the caller validated."""
    from tritonbisect.builds.store import check_location
    from tritonbisect.executors.choose import check_address, parse_resources, require_ray

    executor = kwargs.get("executor") or "local"
    build = parse_resources(kwargs.get("build_resources"), "--build-resources")
    test = parse_resources(kwargs.get("test_resources"), "--test-resources")
    address = kwargs.get("ray_address")
    if executor != "ray":
        given = [name for name, value in (("--ray-address", address), ("--build-resources", build),
                                          ("--test-resources", test)) if value is not None]
        if given:
            raise InputError(f"{', '.join(given)} only apply with --executor ray")
    else:
        require_ray()
    repo_url = kwargs.get("repo_url")
    if repo_url and executor != "ray":
        raise InputError("--repo-url only applies with --executor ray")
    cache_url = kwargs.get("cache_url")
    if cache_url and kwargs.get("cache_dir"):
        raise InputError("give --cache-dir or --cache-url, not both")
    if cache_url and "://" not in cache_url:
        raise InputError(f"--cache-url {cache_url}: not a URL; give s3://BUCKET/PREFIX "
                         "(or a directory with --cache-dir)")
    if cache_url and not cache_url.lower().startswith("s3://"):
        raise InputError(f"--cache-url {cache_url}: only s3:// is supported (any S3-compatible "
                         "store: set AWS_ENDPOINT_URL for MinIO, Ceph, R2...)")
    hide_env(env or {})  # a secret given with --env is starred wherever the run writes
    return ExecutorSettings(
        kind=executor, jobs=jobs, repeat=repeat, timeout=timeout, env=dict(env or {}),
        cache_dir=check_location(cache_url or kwargs.get("cache_dir")), sandbox=sandbox,
        ray_address=check_address(address), build_resources=build, test_resources=test,
        repo_url=repo_url or None, pass_env=list(pass_env or []),
    )


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
                *compile_oracle_options(),
            ]
        options += [
            click.option("--jobs", "-j", type=int, default=1, show_default=True, callback=_validate_positive_int("--jobs"), help="Workers testing commits in parallel, each in its own worktree."),
            click.option("--repeat", type=int, default=None, callback=_validate_positive_int("--repeat"), help="Run each test N times; majority verdict, disagreement recorded as flaky (default 1; with --regress perf, 5 samples per step)."),
            click.option("--timeout", type=float, metavar="S", help="Per-test timeout in seconds (kills the test and everything it started)."),
            click.option("--env", "env", multiple=True, metavar="K=V", help="Environment variable for builds and tests (repeatable)."),
            click.option("--pass-env", "pass_env", multiple=True, metavar="NAME", help="Let builds and tests see this secret of your environment (GITHUB_TOKEN, HF_TOKEN...: variables whose name says TOKEN, SECRET, PASSWORD, API_KEY... are kept from them otherwise; repeatable)."),
            click.option("--on-build-failure", type=click.Choice(BUILD_FAILURE_MODES), default="skip", show_default=True, help="What a commit that does not build counts as."),
            click.option("--regress", type=click.Choice(REGRESS_MODES), default="fail", show_default=True, help="Which outcome is the regression; 'fixed' finds the commit that fixed it."),
            *infra_options(),
            click.option("--first-parent", is_flag=True, help="Follow only the first parent of merges."),
            click.option("--workdir", type=click.Path(file_okay=False, path_type=Path), help="Where sessions, worktrees and caches live (default: $TRITONBISECT_HOME or the user cache dir)."),
            click.option("--json", "json_out", is_flag=True, help="Print one JSON object with the result at the end."),
            click.option("--verify-revert/--no-verify-revert", "verify_revert", default=None, help="Once the culprit is found, build the bad commit with the culprit reverted and test it (1 build per culprit): fixes, still-fails or conflict; when it still fails, bisect again with the culprit reverted for the next culprit (default: on for hunt, off elsewhere)."),
            click.option("--sandbox", is_flag=True, help="Build and test every commit in a sandbox: no network, read-only filesystem except its build folders, private $HOME, allow-listed environment (for untrusted code)."),
            *PERF_OPTIONS,
            click.option("--log-limit", metavar="SIZE", help="Keep at most SIZE of each build's and test's output in its log: the first and the last half, with a line saying how much was cut (default 16M; 0 keeps everything; also $TRITONBISECT_LOG_LIMIT)."),
        ]
        options += verdict_options(test=test)
        return executor_options(_add_options(func, options))

    if f is not None:
        return decorate(f)
    return decorate


def infra_options() -> list[Callable[[F], F]]:
    """--infra-pattern, --no-infra-patterns: which lines of a failing test's output mean the
    machine failed, not the commit (core/outcome.py InfraRule)."""
    return [
        click.option("--infra-pattern", "infra_patterns", multiple=True, metavar="REGEX", help="A failing test whose output matches REGEX failed for the machine's sake: an infrastructure abort (exit 4), not a verdict (repeatable; added to the built-in patterns: 'No space left on device', 'Cannot allocate memory', 'Connection refused', 'Read-only file system', ...)."),
        click.option("--no-infra-patterns", "no_infra_patterns", is_flag=True, help="Do not read the built-in infrastructure patterns in a test's output (a kernel test that prints 'Connection refused' on purpose): only --infra-pattern ones count."),
    ]


def verdict_settings(kwargs: Mapping[str, Any], regress: str) -> VerdictSettings:
    """--regress, --on-build-failure and the infrastructure patterns, checked."""
    patterns = [str(p) for p in kwargs.get("infra_patterns") or ()]
    for pattern in patterns:
        try:
            check_infra_pattern(pattern)
        except ValueError as exc:
            raise InputError(str(exc)) from None
    return VerdictSettings(regress=regress, on_build_failure=kwargs.get("on_build_failure") or "skip",
                           infra_patterns=patterns, builtin_infra_patterns=not kwargs.get("no_infra_patterns"))


# --- flaky tests and judging by hand -------------------------------------------------------


def verdict_options(*, test: bool = True) -> list[Callable[[F], F]]:
    """--flaky, --flake-rate, --confidence, --max-tests, and (with --test) --manual."""
    options: list[Callable[[F], F]] = [
        click.option("--flaky", type=click.Choice(["detect", "auto", "off"]), default="detect", show_default=True, help="Flaky tests: 'auto' runs each endpoint 3 times to measure the error rates and searches by probability from the start; 'detect' does so from the first contradicting verdict; 'off' never."),
        click.option("--flake-rate", metavar="P[,Q]", help="The test's known error rates: P false failures on good commits, Q false passes on bad ones (default 0); implies the flake-aware search."),
        click.option("--confidence", type=float, default=None, help="Posterior probability an answer must reach (flake-aware search), and that 'high' confidence means [default: 0.95; 0.99 with --flaky auto or --flake-rate]."),
        click.option("--max-tests", type=int, metavar="N", help="Search tests allowed to the flake-aware search (default: 6*log2(range)+10)."),
    ]
    if test:
        options.append(click.option("--manual", is_flag=True, help="Judge each commit by hand (the default without --test): it is built and installed, then you answer good/bad/skip."))
    return options + hint_options()


def hint_options() -> list[Callable[[F], F]]:
    """--prefer-pass, --prefer-files: a prior on the commits that touch those sources."""
    return [
        click.option("--prefer-pass", "prefer_pass", multiple=True, metavar="NAME", help="The compiler pass that changed (as `narrow` names it, e.g. TritonGPUCoalesce or tritongpu-coalesce): commits touching its Passes.td declaration and implementation are tried first; a wrong hint costs about 2 builds more on average (repeatable)."),
        click.option("--prefer-files", "prefer_files", multiple=True, metavar="GLOB", help="Files suspected of the regression, from the repository's root (e.g. 'lib/Dialect/TritonGPU/Transforms/Coalesce*'): commits touching them are tried first (repeatable)."),
    ]


def _hint_settings(kwargs: Mapping[str, Any]) -> HintSettings:
    names = [str(n).strip() for n in kwargs.get("prefer_pass") or ()]
    globs = [str(g).strip() for g in kwargs.get("prefer_files") or ()]
    for flag, values in (("--prefer-pass", names), ("--prefer-files", globs)):
        if any(not v for v in values):
            raise InputError(f"{flag} needs a value, e.g. {flag} TritonGPUCoalesce" if flag == "--prefer-pass"
                             else f"{flag} needs a glob, e.g. {flag} 'lib/Dialect/TritonGPU/**'")
    return HintSettings(prefer_pass=names, prefer_files=globs)


def _search_settings(kwargs: Mapping[str, Any]) -> tuple[SearchSettings, bool]:
    """The flaky-test settings and whether a person judges (--manual, or no test given), from
    the command's keyword arguments."""
    from tritonbisect.session.flakiness import parse_flake_rate
    from tritonbisect.session.manual import require_terminal

    search = SearchSettings(first_parent=bool(kwargs.get("first_parent")), flaky=kwargs.get("flaky") or "detect")
    rate = kwargs.get("flake_rate")
    if rate:
        try:
            search.flake_rate = list(parse_flake_rate(str(rate)))
        except ValueError as exc:
            raise InputError(str(exc)) from None
    confidence = kwargs.get("confidence")
    if confidence is not None:
        if not 0.5 <= float(confidence) < 1.0:
            raise InputError(f"--confidence must be at least 0.5 and below 1, got {confidence}")
        search.confidence = float(confidence)
    max_tests = kwargs.get("max_tests")
    if max_tests is not None:
        if int(max_tests) < 1:
            raise InputError("--max-tests must be at least 1")
        search.max_tests = int(max_tests)
    has_test_options = "test" in kwargs or "repro" in kwargs
    given = bool(kwargs.get("test") or kwargs.get("repro"))
    if kwargs.get("manual") and given:
        raise InputError("--manual and --test/--repro are mutually exclusive: a person or a test judges")
    manual = bool(kwargs.get("manual") or (has_test_options and not given))
    if manual:
        if (kwargs.get("jobs") or 1) > 1:
            raise InputError("commits judged by hand are built one at a time: drop --jobs")
        require_terminal()
    return search, manual


def bisect_settings(**kwargs: Any) -> BisectSettings:
    """Validated BisectSettings from the keyword arguments of a command using the options.

    Unknown keys (the command's own options, and --json: the command's output) are ignored.
    """
    test = kwargs.get("test")
    repro = kwargs.get("repro")
    kernel = kwargs.get("kernel")
    launch_id = kwargs.get("launch_id")
    if test and repro:
        raise InputError("--test and --repro are mutually exclusive; give one")
    if (kernel or launch_id is not None) and not repro:
        raise InputError("--kernel and --launch-id go with --repro TRACE")
    ir_file = bool(repro) and str(repro).endswith((".ttir", ".ttgir"))  # --repro k.ttgir --oracle ir
    if repro and not kernel and not ir_file:
        raise InputError("--repro needs --kernel K (the kernel to reproduce)")
    oracle = compile_oracle_settings(kwargs)
    narrow, reduce = _narrow_and_reduce(kwargs, oracle["oracle"])
    timeout = kwargs.get("timeout")
    if timeout is not None and timeout <= 0:
        raise InputError("--timeout must be a positive number of seconds")
    jobs = kwargs.get("jobs") or 1
    regress = kwargs.get("regress") or "fail"
    repeat = kwargs.get("repeat") or (DEFAULT_SAMPLES if regress in METRIC_MODES else 1)
    if jobs < 1 or repeat < 1:
        raise InputError("--jobs and --repeat must be at least 1")
    perf = perf_options(kwargs, regress=regress, repeat=repeat)
    if kwargs.get("sandbox"):
        from tritonbisect.builds.sandbox import require

        require()  # refuse before a session exists
    env = _with_log_limit(parse_env(kwargs.get("env")), kwargs.get("log_limit"))
    workdir = resolve_workdir(kwargs.get("workdir"))
    executor = executor_settings(kwargs, jobs=jobs, repeat=repeat, timeout=timeout, env=env,
                                 sandbox=bool(kwargs.get("sandbox")),
                                 pass_env=parse_pass_env(kwargs.get("pass_env")))
    search, manual = _search_settings(kwargs)
    hint = _hint_settings(kwargs)
    return BisectSettings(
        workdir=workdir,
        executor=executor,
        verdicts=verdict_settings(kwargs, regress),
        perf=perf,
        test=TestSettings(command=test, repro=repro, kernel=kernel, launch_id=launch_id, manual=manual, **oracle),
        search=search,
        hint=hint,
        follow_ups=FollowUps(verify_revert=_verify_revert(kwargs), narrow=narrow, reduce=reduce,
                             workaround=_workaround(kwargs, oracle["oracle"])),
    )


def _workaround(kwargs: Mapping[str, Any], oracle: str) -> bool:
    if kwargs.get("workaround_after") and not compiles(oracle):
        raise InputError("--workaround goes with --oracle compile or --oracle ir (it compiles the oracle's kernel "
                         "with changed options)")
    return bool(kwargs.get("workaround_after"))


def wants_json(kwargs: Mapping[str, Any]) -> bool:
    """--json: the command prints its result as one JSON object (its output, not a setting of
    the session: `resume` has its own --json)."""
    return bool(kwargs.get("json_out"))


def _verify_revert(kwargs: Mapping[str, Any]) -> bool:
    if not kwargs.get("verify_revert"):
        return False
    if kwargs.get("manual") or ("test" in kwargs and not (kwargs.get("test") or kwargs.get("repro"))):
        raise InputError("--verify-revert runs the test on the reverted bad commit: give --test CMD or --repro TRACE")
    if (kwargs.get("regress") or "fail") == "fixed":
        raise InputError("--verify-revert checks a regression's culprit; it does not go with --regress fixed")
    return True


def _with_log_limit(env: dict[str, str], given: str | None) -> dict[str, str]:
    """--log-limit travels with the step environment (to every worker, and into session.json
    for `resume`), where the process runner reads it."""
    from tritonbisect.core.loglimit import LOG_LIMIT_ENV, parse_size

    value = given if given is not None else env.get(LOG_LIMIT_ENV)
    if value is None:
        return env
    try:
        env[LOG_LIMIT_ENV] = str(parse_size(value))
    except ValueError as exc:
        raise InputError(f"--log-limit: {exc}") from None
    return env


# --- compile oracle ----------------------------------------------------------------------
# `--repro TRACE --oracle compile`: cross-compile the traced kernel for the traced GPU at each
# commit (no GPU needed): pass / compile_error / crash; `--check codegen` also fails a commit
# whose codegen statistics (registers, spills, instruction mix) moved past a threshold.


def compile_oracle_options() -> list[Callable[[F], F]]:
    return [
        click.option("--oracle", type=click.Choice(BISECT_CHOICES), default=DEFAULT_ORACLE.value, show_default=True, help="With --repro: runtime runs the launch and compares outputs; compile cross-compiles the kernel for the traced GPU, no GPU needed (pass/compile_error/crash); ir compiles the recorded IR (--from), and IR a commit cannot read is skipped."),
        click.option("--from", "ir_from", type=click.Choice(["ttir", "ttgir", "source"]), default=None, help="With --oracle ir: which recorded IR to compile (default ttir; source: the Python source, as --oracle compile)."),
        click.option("--check", "check", multiple=True, type=click.Choice(["codegen", "compile-time"]), help="With --oracle compile: codegen statistics past a threshold (vs the good commit's) make a commit bad; compile-time: each run times the compile (its metric; --regress compile-time implies it)."),
        click.option("--compile-clock", type=click.Choice(["cpu", "wall"]), default=None, help="With --regress compile-time: time the compile in CPU seconds (default: the compile's own and ptxas's, which other work on the machine barely moves) or wall-clock seconds."),
        click.option("--codegen-threshold", "codegen_thresholds", multiple=True, metavar="METRIC=LIMIT", help="With --check codegen: check only these metrics, e.g. spills=0, regs=10%, 'ptx.wgmma=0' (repeatable)."),
        click.option("--narrow", is_flag=True, help="With --oracle compile|ir: once the culprit is found, compile the kernel at it and its parent (cached builds) under MLIR_ENABLE_DUMP=1 and name the first pass whose output differs."),
        click.option("--reduce", "reduce_after", is_flag=True, help="With --repro: once the culprit is found, shrink the oracle's kernel, IR and inputs with its parent (good) and it (bad) from their cached builds, as `reduce --session` does; the report shows the reduced kernel."),
        click.option("--reduce-level", metavar="LEVELS", help="With --reduce: comma list of source, ir, inputs, as `reduce --level` takes it (default: all three)."),
        click.option("--reduce-jobs", type=int, metavar="N", help="With --reduce: candidates run at a time, as `reduce --jobs` (default 2)."),
        click.option("--reduce-timeout", type=float, metavar="S", help="With --reduce: seconds per candidate run before it counts as a hang, as `reduce --timeout` (default 120)."),
        click.option("--compile-target", metavar="BACKEND:ARCH", help="With --oracle compile: compile for this target instead of the traced one (cuda:90, hip:gfx942)."),
        click.option("--workaround", "workaround_after", is_flag=True, help="With --oracle compile|ir: once the culprit is found, look for the launch options, configs and Triton switches that make its build pass the oracle, as `tritonbisect workaround` does (its parent's build is the good one)."),
    ]


def compile_oracle_settings(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The compile oracle's fields of TestSettings, validated."""
    oracle = oracle_kind(kwargs.get("oracle") or None).value
    check = list(kwargs.get("check") or ())
    if (kwargs.get("regress") or "fail") == "compile-time":
        if not compiles(oracle) or not kwargs.get("repro"):
            raise InputError("--regress compile-time times the compile oracle's compile: give --repro TRACE "
                             "--kernel K --oracle compile (or --oracle ir)")
        if "compile-time" not in check:
            check.append("compile-time")
    clock = kwargs.get("compile_clock")
    if clock and "compile-time" not in check:
        raise InputError("--compile-clock goes with --regress compile-time (or --check compile-time)")
    thresholds = list(kwargs.get("codegen_thresholds") or ())
    target = kwargs.get("compile_target")
    ir_from = kwargs.get("ir_from")
    if ir_from and oracle != OracleKind.IR:
        raise InputError("--from goes with --oracle ir")
    if compiles(oracle) and not kwargs.get("repro"):
        raise InputError(f"--oracle {oracle} goes with --repro TRACE (the trace of the kernel to compile)")
    if compiles(oracle) and kwargs.get("launches"):
        raise InputError(f"--oracle {oracle} compiles one kernel: give --kernel K, not --launches")
    if oracle == OracleKind.IR and (ir_from or "ttir") != "source" and "codegen" in check:
        raise InputError("--check codegen goes with --oracle compile (or --oracle ir --from source)")
    if (check or target) and not compiles(oracle):
        raise InputError("--check and --compile-target go with --oracle compile")
    if thresholds and "codegen" not in check:
        raise InputError("--codegen-threshold goes with --check codegen")
    if thresholds:
        from tritonbisect.oracles.compile.standalone import tb_codegen

        try:
            tb_codegen.parse_thresholds(thresholds)
        except ValueError as exc:
            raise InputError(f"--codegen-threshold: {exc}") from None
    if target:
        from tritonbisect.oracles.compile.spec import parse_target_text

        parse_target_text(target)
    return {"oracle": oracle, "check": check, "codegen_thresholds": thresholds, "compile_target": target,
            "ir_from": (ir_from or "ttir") if oracle == OracleKind.IR else "source", "compile_clock": clock or "cpu"}


def _narrow_and_reduce(kwargs: Mapping[str, Any], oracle: str) -> tuple[bool, ReduceOptions]:
    """--narrow, and --reduce with --reduce-level/--reduce-jobs/--reduce-timeout (validated as
    `reduce` validates its own)."""
    from tritonbisect.session.follow_ups import DEFAULT_JOBS, DEFAULT_TIMEOUT, LEVELS, parse_levels

    if kwargs.get("narrow") and not compiles(oracle):
        raise InputError("--narrow goes with --oracle compile or --oracle ir (it compiles the oracle's kernel)")
    if kwargs.get("reduce_after") and not kwargs.get("repro"):
        raise InputError("--reduce goes with --repro TRACE (it shrinks the oracle's kernel)")
    given = [f"--reduce-{name}" for name in ("level", "jobs", "timeout") if kwargs.get(f"reduce_{name}") is not None]
    if given and not kwargs.get("reduce_after"):
        raise InputError(f"{given[0]} goes with --reduce")
    jobs, timeout = kwargs.get("reduce_jobs"), kwargs.get("reduce_timeout")
    if jobs is not None and not 1 <= jobs <= 64:
        raise InputError(f"--reduce-jobs {jobs}: give 1 to 64 candidates at a time")
    if timeout is not None and timeout <= 0:
        raise InputError("--reduce-timeout must be a positive number of seconds")
    level = kwargs.get("reduce_level")
    return bool(kwargs.get("narrow")), ReduceOptions(
        enabled=bool(kwargs.get("reduce_after")),
        levels=list(parse_levels(level, "--reduce-level") if level is not None else LEVELS),
        jobs=jobs or DEFAULT_JOBS, timeout=timeout or DEFAULT_TIMEOUT,
    )


# --- performance regressions (--regress perf) --------------------------------------------
# A step runs --repeat times (default 5) and reports a metric each run; core.perf judges its
# samples, paired with its reference's runs (--perf-design paired, the default) or against
# the good endpoint's measured once (unpaired). These options only go with --regress perf.

PERF_OPTIONS = [
    # --perf-threshold: --threshold alone also names codegen limits elsewhere (the compile oracle)
    click.option("--perf-threshold", "--threshold", "threshold", metavar="PCT", **hidden_alias("--threshold"), help="With --regress perf: how much worse than its reference (the good endpoint; a culprit's parent) a commit must be to be bad, e.g. 5% (default 5%)."),
    click.option("--significance", type=float, metavar="P", help="With --regress perf: the significance of each side of a verdict (default 0.01)."),
    click.option("--max-samples", type=int, metavar="N", help="With --regress perf: samples (paired: pairs) a step may take before it is called flaky; unpaired, the good endpoint takes this many (default 4 x --repeat)."),
    click.option("--higher-is-better", is_flag=True, help="With --regress perf: the metric is a rate (higher is better), not a time."),
    click.option("--perf-design", type=click.Choice(["paired", "unpaired"]), default=None, help="With --regress perf: paired (default) runs every step interleaved with its reference on the same worker and judges the pairs, robust to a shared or drifting machine; unpaired measures the good endpoint once and compares every step with it (a test that cannot run two builds side by side)."),
    click.option("--verify-samples", type=int, metavar="N", help="With --regress perf, paired: the pairs the A/B of the endpoints and of each culprit against its parent may take (default 30)."),
]


def perf_options(kwargs: Mapping[str, Any], *, regress: str, repeat: int) -> PerfOptions:
    """The validated perf options; InputError for a misuse, in one line."""
    given = [
        name for name, key in (("--perf-threshold", "threshold"), ("--significance", "significance"),
                               ("--max-samples", "max_samples"), ("--higher-is-better", "higher_is_better"),
                               ("--perf-design", "perf_design"), ("--verify-samples", "verify_samples"))
        if kwargs.get(key) not in (None, False)
    ]
    if regress not in METRIC_MODES:
        if given:
            raise InputError(f"{given[0]} goes with --regress perf (or compile-time)")
        return PerfOptions()
    try:
        threshold = parse_threshold(kwargs["threshold"]) if kwargs.get("threshold") is not None else None
    except ValueError as exc:
        raise InputError(str(exc)) from None
    options = PerfOptions(
        threshold=threshold,
        significance=kwargs.get("significance"),
        max_samples=kwargs.get("max_samples"),
        higher_is_better=bool(kwargs.get("higher_is_better")),
        design=kwargs.get("perf_design") or "paired",
        verify_samples=kwargs.get("verify_samples"),
    )
    if regress == "compile-time" and options.higher_is_better:
        raise InputError("--higher-is-better goes with --regress perf (a compile time is better lower)")
    if kwargs.get("verify_samples") is not None and options.design != "paired":
        raise InputError("--verify-samples goes with --perf-design paired (the unpaired design has no A/B)")
    try:
        options.resolve(repeat, what=regress)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    return options
