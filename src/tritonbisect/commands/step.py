"""`tritonbisect step`: one build and test of the current checkout, for `git bisect run`.

`git bisect run` starts this once per commit, so it must start fast: this module imports
neither click nor the rest of the tool at load time. `tritonbisect.cli` hands a plain
`step` command line to `fast_main`; anything out of the ordinary (`--help`, an unknown or
malformed option) goes to the click command of `commands/step_cli.py`, which has the same
options, messages and exit codes.

Exits 0 good, 1 bad, 125 skip, 128 abort, and nothing else: a tool problem must never look
like a verdict about the commit.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

REGRESS_CHOICES = ("fail", "crash", "mismatch", "compile_error", "out_of_resources", "fixed")
DEFAULT_BUILD_TIMEOUT = 3 * 3600.0  # as `run --build-timeout`
BUILD_FAILURE_CHOICES = ("skip", "abort", "bad")
PROTOCOL_CODES = (0, 1, 125, 128)


def _say(message: str) -> None:
    print(f"tritonbisect step: {message}", file=sys.stderr, flush=True)


def guarded(run: Callable[[], int]) -> int:
    """`run()`'s exit code; any failure of the tool itself is reported and becomes 128."""
    from tritonbisect.core.errors import TritonBisectError

    try:
        code = run()
    except TritonBisectError as exc:
        _say(f"{exc.message} (exit 128: abort)")
        return 128
    except OSError as exc:
        from tritonbisect.core.oserrors import place_error

        err = place_error(exc)
        _say(f"{err.message if err else f'{type(exc).__name__}: {exc}'} (exit 128: abort)")
        return 128
    except (Exception, KeyboardInterrupt) as exc:  # noqa: BLE001 - git must see an abort
        _say(f"{type(exc).__name__}: {exc} (exit 128: abort)")
        return 128
    return code if code in PROTOCOL_CODES else 128


def run_step(
    build_cmd: str | None,
    test_cmd: str,
    timeout: float | None = None,
    env: tuple[str, ...] | list[str] = (),
    pass_env: tuple[str, ...] | list[str] = (),
    repeat: int = 1,
    regress: str = "fail",
    on_build_failure: str = "skip",
    workdir: Path | None = None,
    sandbox: bool = False,
    infra_patterns: tuple[str, ...] | list[str] = (),
    no_infra_patterns: bool = False,
    build_timeout: float = DEFAULT_BUILD_TIMEOUT,
) -> int:
    """Build and test the checkout in the current directory once; the git bisect exit code.
    `sandbox`: the build and the test run in builds/sandbox.py's sandbox. `infra_patterns`,
    `no_infra_patterns`: which lines of a failing test's output mean an abort (core/outcome.py)."""
    import dataclasses
    import time

    from tritonbisect.builds.recipes import StepContext, TestSpec, recipe_from_config
    from tritonbisect.core.errors import InputError
    from tritonbisect.core.gitrun import git, pin_checkout
    from tritonbisect.core.outcome import EXIT_CODE_OF_VERDICT, InfraRule, Policy, Verdict
    from tritonbisect.core.secrets import hide_env, pass_through
    from tritonbisect.core.step_args import (
        check_test_command,
        parse_env,
        parse_pass_env,
        resolve_workdir,
    )
    from tritonbisect.executors.runner import execute_step, execute_with_retry

    if repeat < 1:
        raise InputError("--repeat must be at least 1")
    try:
        infra = InfraRule(tuple(infra_patterns), not no_infra_patterns)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    pass_through(parse_pass_env(pass_env))
    hide_env(parse_env(env))
    if build_timeout <= 0:
        raise InputError("--build-timeout must be a positive number of seconds")
    cwd = Path.cwd()
    # the checkout's git folder as git finds it now, before the build runs: git never reads
    # its `.git` again, and a sandboxed build gets it read-only
    if pin_checkout(cwd) is None:
        raise InputError(f"{cwd} is not a git checkout")
    try:
        commit = git(["rev-parse", "HEAD"], cwd=cwd).strip()
    except Exception:  # noqa: BLE001
        raise InputError(f"{cwd} is not a git checkout") from None
    command = check_test_command(test_cmd, cwd=cwd)
    home = resolve_workdir(workdir)
    root = home / "step-logs"
    log_dir = root / f"{time.strftime('%Y%m%d-%H%M%S')}-{commit[:12]}"
    n = 1
    while log_dir.exists():
        n += 1
        log_dir = root / f"{time.strftime('%Y%m%d-%H%M%S')}-{commit[:12]}-{n}"
    recipe = recipe_from_config("command", {"build": build_cmd, "test": TestSpec(command).to_dict(),
                                            "build_timeout": build_timeout})
    policy = Policy(regress=regress, on_build_failure=on_build_failure, infra=infra)
    if sandbox:
        from tritonbisect.builds.sandbox import announce

        _say(announce())
    # the workdir holds the sandbox's caches (else beside the checkout, in the user's folder)
    ctx = StepContext(worktree=cwd, log_dir=log_dir, worker=0, env=parse_env(env), timeout=timeout,
                      sandbox=sandbox, workdir=home)

    def attempt(d: Path):
        return execute_step(recipe, commit, dataclasses.replace(ctx, log_dir=d), policy, repeat=repeat)

    result = execute_with_retry(attempt, log_dir)
    verdict = Verdict(result.verdict)
    code = EXIT_CODE_OF_VERDICT[verdict]
    _say(f"{commit[:12]} {result.kind} -> {verdict.value} (exit {code}): {result.reason} [logs: {log_dir}]")
    return code


# --- the command line without click ---------------------------------------------------------

_VALUE_OPTIONS: dict[str, tuple[str, Callable[[str], Any]]] = {
    "--build": ("build_cmd", str),
    "--test": ("test_cmd", str),
    "--timeout": ("timeout", float),
    "--build-timeout": ("build_timeout", float),
    "--env": ("env", str),
    "--pass-env": ("pass_env", str),
    "--repeat": ("repeat", int),
    "--regress": ("regress", str),
    "--on-build-failure": ("on_build_failure", str),
    "--workdir": ("workdir", Path),
    "--infra-pattern": ("infra_patterns", str),
}
_FLAGS = {"--sandbox": "sandbox", "--no-infra-patterns": "no_infra_patterns"}


def parse_plain(args: list[str]) -> dict[str, Any] | None:
    """The options of a well-formed `step` command line; None for anything else (help, an
    unknown option, a bad value), which the click command then answers with its message."""
    values: dict[str, Any] = {"env": [], "pass_env": [], "infra_patterns": []}
    i = 0
    while i < len(args):
        word = args[i]
        if word in _FLAGS:
            values[_FLAGS[word]] = True
            i += 1
            continue
        name, eq, value = word.partition("=")
        if name not in _VALUE_OPTIONS:
            return None
        if not eq:
            if i + 1 >= len(args):
                return None
            value = args[i + 1]
            i += 1
        i += 1
        key, convert = _VALUE_OPTIONS[name]
        try:
            converted = convert(value)
        except ValueError:
            return None
        if key in ("env", "pass_env", "infra_patterns"):
            values[key].append(converted)
        else:
            values[key] = converted
    if "test_cmd" not in values:
        return None
    if values.get("regress", "fail") not in REGRESS_CHOICES:
        return None
    if values.get("on_build_failure", "skip") not in BUILD_FAILURE_CHOICES:
        return None
    workdir = values.get("workdir")
    if workdir is not None and (not str(workdir) or workdir.is_file()):
        return None
    values["env"] = tuple(values["env"])
    values["pass_env"] = tuple(values["pass_env"])
    values["infra_patterns"] = tuple(values["infra_patterns"])
    values.setdefault("build_cmd", None)
    return values


def fast_main(args: list[str]) -> int | None:
    """Run `step` from a plain command line; None when the click command must handle it."""
    values = parse_plain(args)
    if values is None:
        return None
    return guarded(lambda: run_step(**values))
