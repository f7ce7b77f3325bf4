"""The `compat-builder` command: map, fix, resume, status, verify."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import click

from tritonbisect import __version__
from tritonbisect.builds.sandbox import Sandbox, detect, why_unavailable
from tritonbisect.cli.entry import run_cli
from tritonbisect.commands.echo import echo
from tritonbisect.commands.help_sections import sectioned
from tritonbisect.compat_builder import gitops
from tritonbisect.compat_builder.agent import (
    DEFAULT_MODEL,
    AgentSettings,
    AnthropicAgent,
    require_anthropic,
)
from tritonbisect.compat_builder.fixer import Fixer
from tritonbisect.compat_builder.mapper import Mapper, llvm_range, read_llvm_pin
from tritonbisect.compat_builder.probe import COMPATIBLE, DEFAULT_SMOKE, SKIP, Prober
from tritonbisect.compat_builder.session_state import (
    DONE,
    FIXING,
    MANUAL,
    MapState,
    SessionLock,
    new_session_id,
    session_dir,
    sessions_root,
)
from tritonbisect.core.errors import EXIT_MANUAL_FIX_NEEDED, InputError, TritonBisectError
from tritonbisect.core.history import History
from tritonbisect.domains.llvm.compat_map import order_problems, read_map
from tritonbisect.domains.llvm.fork import fork_range
from tritonbisect.executors.pool_settings import ExecutorSettings
from tritonbisect.options.bisect_options import executor_options, executor_settings, resolve_workdir

AI_CHOICES = ("anthropic", "claude-cli", "none")
_EXECUTOR_KEY = "tritonbisect.executor"


def _echo(message: str) -> None:
    echo(f"compat-builder: {message}", err=True)


@contextlib.contextmanager
def _api_key_kept_apart() -> Iterator[str | None]:
    """Take ANTHROPIC_API_KEY out of the environment while we work, so that no build, test or
    log of ours ever sees it; only the agent gets it."""
    key = os.environ.pop("ANTHROPIC_API_KEY", None)
    try:
        yield key
    finally:
        if key is not None:
            os.environ["ANTHROPIC_API_KEY"] = key


def _workdir_option(f):
    return click.option(
        "--workdir", type=click.Path(file_okay=False, path_type=Path),
        help="Where sessions, worktrees and caches live (default: $TRITONBISECT_HOME or the user cache dir).",
    )(f)


def _ai_options(f):
    options = [
        click.option("--ai", "ai", type=click.Choice(AI_CHOICES), default=None,
                     help="Who fixes Triton: the Anthropic API (default), the claude CLI, or nobody (manual)."),
        click.option("--ai-model", default=None, help=f"Model for --ai anthropic/claude-cli (default {DEFAULT_MODEL})."),
        click.option("--max-attempts", type=click.IntRange(1, 50), default=None,
                     help="Fix attempts per incompatible LLVM commit (default 5)."),
        click.option("--ai-timeout", type=float, default=None,
                     help="Seconds per API request (anthropic) or per attempt (claude-cli)."),
        click.option("--ai-backoff", type=float, default=None, hidden=True,
                     help="Base of the exponential backoff between API retries, in seconds."),
    ]
    for option in reversed(options):
        f = option(f)
    return f


def _executor_block(f):
    """--executor, --ray-address, --build-resources, --cache-dir: where probes run. Their
    values go to the click context (`_new_prober` reads them), not to the command."""

    @functools.wraps(f)
    def wrapper(*args, executor, ray_address, build_resources, cache_dir, **kwargs):
        click.get_current_context().meta[_EXECUTOR_KEY] = executor_settings(
            {"executor": executor, "ray_address": ray_address,
             "build_resources": build_resources, "cache_dir": cache_dir})
        return f(*args, **kwargs)

    return executor_options(wrapper, test_resources=False)


def _new_prober(**kwargs):
    """A Prober here, or one whose probes run on a Ray cluster (--executor ray)."""
    ctx = click.get_current_context()
    executor: ExecutorSettings = ctx.meta.get(_EXECUTOR_KEY) or ExecutorSettings()
    kwargs["cache_dir"] = executor.cache_dir
    if executor.kind != "ray":
        return Prober(**kwargs)
    from tritonbisect.compat_builder.remote_probe import RemoteProber

    build_resources, _test_resources = executor.resources()
    prober = RemoteProber(kwargs, address=executor.ray_address, build_resources=build_resources, log=_echo)
    ctx.call_on_close(prober.close)
    return prober


def _probe_options(f):
    f = _executor_block(f)
    options = [
        click.option("--smoke", default=None,
                     help=f"Smoke command run in Triton's tree with the venv's python (default: {DEFAULT_SMOKE})."),
        click.option("--build-timeout", type=float, default=None, help="Seconds for one LLVM or Triton build."),
        click.option("--venv", type=click.Path(file_okay=False, path_type=Path), default=None,
                     help="Probe in this virtual environment (Triton is replaced there; default: one per session)."),
        click.option("--unsandboxed-builds", is_flag=True, default=False,
                     help="Where no sandbox (bubblewrap, unshare) works: build and run AI-written code anyway, "
                     "with your own rights (network, your $HOME, your environment's secrets)."),
    ]
    for option in reversed(options):
        f = option(f)
    return f


# --- wiring ---------------------------------------------------------------------------------
def _sandbox(unsandboxed_builds: bool, *, model_code: bool) -> Sandbox | None:
    """The sandbox probes (and the claude CLI) run in, announced in one line; None where none
    works and that is allowed: no model-written code to build, or --unsandboxed-builds."""
    found = detect()
    if found is not None:
        _echo(f"sandbox: {found.describe()}")
        return found
    why = why_unavailable()
    if unsandboxed_builds:
        _echo(f"sandbox: NONE ({why}); --unsandboxed-builds: the model's edits are built and run with your "
              "own rights (network, your $HOME, every variable of your environment)")
        return None
    if model_code:
        raise InputError(
            f"no sandbox works on this machine ({why}), and AI-written code is only built in one: install "
            "bubblewrap (apt-get install bubblewrap), or pass --unsandboxed-builds to build it with your own "
            "rights (network, your $HOME, your environment's secrets)")
    _echo(f"sandbox: none ({why}); builds run with your rights (no AI-written code in this session)")
    return None


def _has_model_code(state: MapState) -> bool:
    return state.ai != "none" or any(f.get("model") for f in state.fixes)


def _llvm_repo(triton_repo: Path, llvm_dir: Path | None) -> Path:
    if llvm_dir is None:
        guess = triton_repo / "llvm-project"
        if not guess.is_dir():
            raise InputError(f"no LLVM repository given: pass --llvm-dir (not found at {guess})")
        llvm_dir = guess
    return History(llvm_dir).root


def _require_ai(ai: str | None) -> None:
    """Before anything is made: the SDK of the default fixer (--ai anthropic) is an extra."""
    if (ai or "anthropic") == "anthropic":
        require_anthropic()


def _agent(state: MapState, api_key: str | None, timeout: float | None, backoff: float | None,
           sandbox: Sandbox | None = None):
    if state.ai == "none":
        return None
    if state.ai == "claude-cli":
        from tritonbisect.compat_builder.claude_cli import ClaudeCliAgent

        return ClaudeCliAgent(model=state.ai_model or None, timeout=timeout or 1800.0, api_key=api_key,
                              sandbox=sandbox)
    settings = AgentSettings(model=state.ai_model or DEFAULT_MODEL)
    if timeout:
        settings.timeout = timeout
    if backoff is not None:
        settings.backoff_base = backoff
        settings.backoff_max = max(backoff * 30, 0.05)
    return AnthropicAgent(settings, api_key=api_key, log=_echo)


def _mapper(state: MapState, workdir: Path, *, api_key: str | None, ai_timeout=None, ai_backoff=None,
            build_timeout=None, venv=None, sandbox: Sandbox | None = None) -> Mapper:
    if Path(state.worktree).exists():
        gitops.attach(Path(state.triton_repo), Path(state.worktree))
    prober = _new_prober(
        triton_repo=Path(state.triton_repo), llvm_repo=Path(state.llvm_repo), workdir=workdir,
        llvm_source=state.dir / "llvm-src", smoke=state.smoke, timeout=build_timeout,
        venv=str(venv) if venv else None, sandbox=sandbox is not None, fork=state.fork,
    )
    hint = f" --workdir {workdir}"
    agent = _agent(state, api_key, ai_timeout, ai_backoff, sandbox)
    fixer = Fixer(state, prober, agent, log=_echo, workdir_hint=hint)
    return Mapper(state, prober, fixer, log=_echo)


def _apply_ai_overrides(state: MapState, ai, ai_model, max_attempts) -> None:
    if ai is not None:
        state.ai = ai
    if ai_model is not None:
        state.ai_model = ai_model
    if max_attempts is not None:
        state.max_attempts = max_attempts


def _run(state: MapState, mapper: Mapper) -> str:
    result = mapper.run()
    echo(result)
    return result


# --- commands -------------------------------------------------------------------------------
@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="compat-builder")
def root() -> None:
    """Build and maintain the Triton<->LLVM compatibility map (commits.csv)."""


@root.command("map")
@click.option("--bump", required=True, help="The Triton commit that changed the pinned LLVM (cmake/llvm-info.json or cmake/llvm-hash.txt).")
@click.option("--triton-dir", type=click.Path(file_okay=False, path_type=Path), default=Path("."),
              show_default="current folder", help="The Triton repository (its checkout is never touched).")
@click.option("--llvm-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="The llvm-project repository (default: <triton-dir>/llvm-project).")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=Path("commits.csv"),
              show_default=True, help="Where to write the map.")
@click.option("--strategy", type=click.Choice(["continue", "restart"]), default="continue", hidden=True,
              help="After a fix, search on from the fixed commit (continue) or re-bisect the whole "
              "range (restart: the benchmark's baseline).")
@_ai_options
@_probe_options
@_workdir_option
def map_command(bump, triton_dir, llvm_dir, out, strategy, ai, ai_model, max_attempts, ai_timeout, ai_backoff,
                smoke, build_timeout, venv, unsandboxed_builds, workdir) -> None:
    """Map a bump: for every LLVM commit between the old and new hash, a Triton commit that builds."""
    _require_ai(ai)
    workdir = resolve_workdir(workdir)
    triton = History(triton_dir)
    triton_repo = triton.root
    llvm_repo = _llvm_repo(triton_repo, llvm_dir)
    llvm = History(llvm_repo)
    bump = triton.resolve(bump)
    parent = triton.resolve(f"{bump}~1")
    old_pin, new_pin = read_llvm_pin(triton, parent), read_llvm_pin(triton, bump)
    old_hash, new_hash = old_pin.hash, new_pin.hash
    if old_hash == new_hash:
        why = ("it changes only the prebuilt LLVM's build number"
               if old_pin.build_number != new_pin.build_number else "the pinned LLVM commit is the same")
        raise InputError(f"{bump[:12]} is not an LLVM bump: {why} ({old_hash[:12]}); "
                         "pass the commit that changes the llvm-project hash")
    try:
        old_llvm, new_llvm = llvm.resolve(old_hash), llvm.resolve(new_hash)
    except InputError as exc:
        raise InputError(f"{exc.message}: fetch the bump's LLVM commits into {llvm_repo}") from None
    fork = fork_range(llvm, old_llvm, new_llvm)
    if fork is not None:  # map upstream between the pins' bases, the fork's patches replayed
        _echo(fork.describe())
        old_llvm, new_llvm = fork.good_base, fork.bad_base
    if not llvm.is_ancestor(old_llvm, new_llvm):
        raise InputError(f"old LLVM {old_llvm[:12]} is not an ancestor of new LLVM {new_llvm[:12]}")
    branch = f"compat/{bump[:8]}"
    if gitops.branch_exists(triton_repo, branch):
        raise InputError(
            f"branch {branch} already exists in {triton_repo}: continue its session with "
            f"`compat-builder resume`, or delete it (git worktree prune; git branch -D {branch})"
        )
    # announced (or refused) once the inputs are known good, before anything is created
    sandbox = _sandbox(unsandboxed_builds, model_code=(ai or "anthropic") != "none")
    sid = new_session_id(bump[:8])
    sdir = sessions_root(workdir) / sid
    state = MapState.create(
        sdir, id=sid, kind="map", triton_repo=str(triton_repo), llvm_repo=str(llvm_repo),
        worktree=str(sdir / "triton"), branch=branch, ai=ai or "anthropic", ai_model=ai_model or "",
        max_attempts=max_attempts or 5, smoke=smoke or DEFAULT_SMOKE, out_csv=str(out.absolute()),
        bump=bump, old_llvm=old_llvm, new_llvm=new_llvm, current_triton=parent, current_good=old_llvm,
        strategy=strategy, argv=sys.argv[1:], fork=fork.config() if fork else None,
    )
    _echo(f"session {sid}: LLVM {old_llvm[:12]}..{new_llvm[:12]}, Triton {parent[:12]} on {branch}")
    with SessionLock(sdir), _api_key_kept_apart() as key:
        gitops.add_worktree(triton_repo, Path(state.worktree), parent, branch=branch)
        mapper = _mapper(state, workdir, api_key=key, ai_timeout=ai_timeout, ai_backoff=ai_backoff,
                         build_timeout=build_timeout, venv=venv, sandbox=sandbox)
        _run(state, mapper)


@root.command("fix")
@click.option("--llvm-commit", required=True, help="The LLVM commit Triton must build against.")
@click.option("--triton-commit", default=None,
              help="The Triton commit to fix (default: the head of --branch when it exists, else HEAD).")
@click.option("--branch", default=None, help="Branch for the fix (default compat/fix-<llvm[:8]>).")
@click.option("--triton-dir", type=click.Path(file_okay=False, path_type=Path), default=Path("."),
              show_default="current folder", help="The Triton repository (its checkout is never touched).")
@click.option("--llvm-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="The llvm-project repository (default: <triton-dir>/llvm-project).")
@_ai_options
@_probe_options
@_workdir_option
def fix_command(llvm_commit, triton_commit, branch, triton_dir, llvm_dir, ai, ai_model, max_attempts,
                ai_timeout, ai_backoff, smoke, build_timeout, venv, unsandboxed_builds, workdir) -> None:
    """Make one Triton commit build against one LLVM commit; prints the fix commit."""
    _require_ai(ai)
    workdir = resolve_workdir(workdir)
    sandbox = _sandbox(unsandboxed_builds, model_code=(ai or "anthropic") != "none")
    triton = History(triton_dir)
    triton_repo = triton.root
    llvm_repo = _llvm_repo(triton_repo, llvm_dir)
    llvm = History(llvm_repo).resolve(llvm_commit)
    branch = branch or f"compat/fix-{llvm[:8]}"
    exists = gitops.branch_exists(triton_repo, branch)
    base = triton.resolve(triton_commit or (branch if exists else "HEAD"))
    sid = new_session_id(f"fix-{llvm[:8]}")
    sdir = sessions_root(workdir) / sid
    state = MapState.create(
        sdir, id=sid, kind="fix", triton_repo=str(triton_repo), llvm_repo=str(llvm_repo),
        worktree=str(sdir / "triton"), branch=branch, ai=ai or "anthropic", ai_model=ai_model or "",
        max_attempts=max_attempts or 5, smoke=smoke or DEFAULT_SMOKE, new_llvm=llvm,
        current_triton=base, current_good="", argv=sys.argv[1:],
    )
    with SessionLock(sdir), _api_key_kept_apart() as key:
        if exists:
            gitops.git(triton_repo, "worktree", "prune")
            gitops.git(triton_repo, "worktree", "add", str(state.worktree), branch)
            gitops.attach(triton_repo, Path(state.worktree))
            gitops.reset_hard(Path(state.worktree), base)
        else:
            gitops.add_worktree(triton_repo, Path(state.worktree), base, branch=branch)
        _echo(f"session {sid}: Triton {base[:12]} against LLVM {llvm[:12]} on {branch}")
        _run(state, _mapper(state, workdir, api_key=key, ai_timeout=ai_timeout, ai_backoff=ai_backoff,
                            build_timeout=build_timeout, venv=venv, sandbox=sandbox))


@root.command("resume")
@click.argument("session", required=False)
@click.option("--fix-commit", default=None, help="Your fix (a commit on the session's compat branch).")
@_ai_options
@_probe_options
@_workdir_option
def resume_command(session, fix_commit, ai, ai_model, max_attempts, ai_timeout, ai_backoff, smoke,
                   build_timeout, venv, unsandboxed_builds, workdir) -> None:
    """Continue a session (the newest by default): after an interruption, or with your fix."""
    workdir = resolve_workdir(workdir)
    sdir = session_dir(workdir, session)
    with SessionLock(sdir), _api_key_kept_apart() as key:
        state = MapState.load(sdir)
        if state.phase == DONE:
            echo(state.result)
            _echo(f"session {state.id} is already complete")
            return
        _apply_ai_overrides(state, ai, ai_model, max_attempts)
        if smoke:
            state.smoke = smoke
        sandbox = _sandbox(unsandboxed_builds, model_code=_has_model_code(state))
        mapper = _mapper(state, workdir, api_key=key, ai_timeout=ai_timeout, ai_backoff=ai_backoff,
                         build_timeout=build_timeout, venv=venv, sandbox=sandbox)
        if fix_commit:
            commit = mapper.accept_manual_fix(fix_commit)
            _echo(f"fix {commit[:12]} builds against LLVM {state.fixes[-1]['llvm'][:12]}; accepted")
        elif state.phase == MANUAL and (ai is not None or max_attempts is not None):
            state.phase = FIXING  # a new round of attempts was asked for
            state.save("retry-ai")
        _run(state, mapper)


@root.command("status")
@click.argument("session", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print the whole state as JSON.")
@_workdir_option
def status_command(session, as_json, workdir) -> None:
    """Where a session (the newest by default) stands."""
    state = MapState.load(session_dir(resolve_workdir(workdir), session))
    if as_json:
        echo(json.dumps(json.loads((state.dir / "state.json").read_text()), indent=1))
        return
    usage = state.usage_total()
    lines = [
        f"session   {state.id} ({state.kind}), phase {state.phase}",
        f"triton    {state.triton_repo}  worktree {state.worktree} (branch {state.branch})",
        f"llvm      {state.llvm_repo}",
    ]
    if state.kind == "map":
        lines.append(f"range     {(state.old_llvm or '')[:12]}..{(state.new_llvm or '')[:12]} (bump {(state.bump or '')[:12]})")
    lines += [
        f"current   Triton {state.current_triton[:12]}, compatible up to LLVM {state.current_good[:12] or '-'}",
        f"pairs     {len(state.pairs)}    fixes {len(state.fixes)}    probes {len(state.probes)} "
        f"(LLVM builds {sum(p.get('llvm_built', False) for p in state.probes)}, "
        f"Triton builds {sum(p.get('triton_built', False) for p in state.probes)})",
        f"AI        {state.ai} {state.ai_model or ''}: {usage['requests']} requests, "
        f"{usage['input_tokens']} input / {usage['output_tokens']} output tokens",
    ]
    if state.incompatible:
        lines.append(f"fixing    LLVM {state.incompatible[:12]}: {len(state.attempts)} attempt(s)")
        for a in state.attempts:
            lines.append(f"          attempt {a['n']}: {a['status']} {a.get('reason') or a.get('summary') or ''}")
    from tritonbisect.compat_builder.provenance import report

    if state.fixes:
        lines += ["fixes", *(f"  {line}" for line in report(state.fixes).splitlines())]
    if state.result:
        lines.append(f"result    {state.result}")
    echo("\n".join(lines))


@root.command("verify")
@click.option("--csv", "csv_path", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="The compatibility map to check (commits.csv).")
@click.option("--llvm-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="llvm-project, to check that rows are in LLVM order (and for --build).")
@click.option("--triton-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="The Triton repository holding the map's commits (default: the current folder, if it is one).")
@click.option("--build", is_flag=True, help="Probe-build every row at both ends of its LLVM range.")
@_probe_options
@_workdir_option
def verify_command(csv_path, llvm_dir, triton_dir, build, smoke, build_timeout, venv, unsandboxed_builds,
                   workdir) -> None:
    """Check a commits.csv: format, SHAs, metadata, LLVM order, Triton commits present; --build re-probes."""
    cmap = read_map(csv_path)
    problems: list[str] = []
    if triton_dir is None and (build or gitops.ok(Path("."), "rev-parse", "--git-dir")):
        triton_dir = Path(".")
    triton_repo = History(triton_dir).root if triton_dir is not None else None
    if triton_repo is None:
        _echo("Triton commits not checked (run it in the Triton repository or pass --triton-dir)")
    else:
        for row in cmap.rows:
            if not gitops.ok(triton_repo, "cat-file", "-e", f"{row.triton_commit}^{{commit}}"):
                problems.append(f"{csv_path}:{row.line}: Triton commit {row.triton_commit[:12]} is not in {triton_repo}")
        for key in ("bump", "final_bad_triton_commit"):
            if not gitops.ok(triton_repo, "cat-file", "-e", f"{cmap.metadata[key]}^{{commit}}"):
                problems.append(f"{csv_path}: {key} {cmap.metadata[key][:12]} is not in {triton_repo}")
    order: list[str] = []
    llvm_repo = None
    if llvm_dir is not None or build:
        if llvm_dir is not None:
            llvm_repo = History(llvm_dir).root
        else:
            assert triton_repo is not None  # --build runs in (or is given) a Triton repository
            llvm_repo = _llvm_repo(triton_repo, None)
        meta = cmap.metadata
        if not gitops.ok(llvm_repo, "cat-file", "-e", f"{meta['new_llvm']}^{{commit}}"):
            problems.append(f"{csv_path}: new_llvm {meta['new_llvm'][:12]} is not in {llvm_repo}")
        else:
            order = [meta["old_llvm"], *llvm_range(History(llvm_repo), meta["old_llvm"], meta["new_llvm"])]
            problems += order_problems(cmap, csv_path, order)
    else:
        _echo("LLVM order not checked (pass --llvm-dir)")
    if build and not problems:
        # a map's commits may hold a model's fixes: built in the sandbox like the map's own probes
        sandbox = _sandbox(unsandboxed_builds, model_code=True)
        problems += _verify_builds(cmap, csv_path, order, triton_repo, llvm_repo, resolve_workdir(workdir),
                                   smoke or DEFAULT_SMOKE, build_timeout, venv, sandbox is not None)
    from tritonbisect.compat_builder.provenance import parse_needs_review

    for commit, scripts in parse_needs_review(cmap.metadata.get("needs_review", "")).items():
        _echo(f"review: Triton {commit[:12]} (a model's fix) changes build scripts: {', '.join(scripts)}")
    for problem in problems:
        echo(problem)
    if problems:
        raise TritonBisectError(f"{csv_path}: {len(problems)} problem(s)", exit_code=1)
    echo(f"{csv_path}: OK ({len(cmap.rows)} rows{', every row builds at both ends' if build else ''})")


def _verify_builds(cmap, csv_path, order, triton_repo, llvm_repo, workdir, smoke, timeout, venv,
                   sandbox: bool) -> list[str]:
    """Probe each row's Triton commit at the first and last LLVM commit of its range."""
    import tempfile

    sessions_root(workdir).mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="verify-", dir=sessions_root(workdir)))
    prober = _new_prober(triton_repo=triton_repo, llvm_repo=llvm_repo, workdir=workdir,
                         llvm_source=scratch / "llvm-src", smoke=smoke, timeout=timeout,
                         venv=str(venv) if venv else None, sandbox=sandbox)
    problems = []
    previous: int | None = None
    with _api_key_kept_apart():
        for row in cmap.rows:
            end = order.index(row.llvm_commit_last_compatible)
            first = 0 if previous is None else min(previous + 1, end)
            for llvm in dict.fromkeys([order[first], order[end]]):
                result = prober.probe(row.triton_commit, llvm, scratch / f"line{row.line}-{llvm[:12]}")
                _echo(f"line {row.line}: Triton {row.triton_commit[:12]} x LLVM {llvm[:12]}: {result.verdict}")
                if result.verdict == SKIP:
                    _echo(f"line {row.line}: LLVM {llvm[:12]} itself does not build; not checked")
                elif result.verdict != COMPATIBLE:
                    problems.append(f"{csv_path}:{row.line}: Triton {row.triton_commit[:12]} does not build "
                                    f"against LLVM {llvm[:12]}: {result.reason} (log: {result.log})")
            previous = end
    return problems


sectioned(root)  # --help by task (commands.help_sections.OPTION_SECTIONS); subcommands in the order above


def main(argv: list[str] | None = None) -> int:
    """Entry point: every TritonBisectError becomes a message on stderr and its exit code
    (exit 10, a fix to commit by hand, is not shown as an error)."""
    return run_cli(root, "compat-builder", argv, not_errors=(EXIT_MANUAL_FIX_NEEDED,))


if __name__ == "__main__":
    sys.exit(main())
