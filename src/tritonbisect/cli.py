"""The `tritonbisect` command: a thin click root that loads each command only when it runs.

`git bisect run` starts `tritonbisect step` once per step, and `--help` should answer at
once: importing every command module (GitPython, rich, the domain bisectors) cost about
0.2 s per start. The root therefore knows its commands only by name, where they live and
their one-line help, and imports a command's module when that command is invoked (or its
own `--help` is asked for).

Adding a command: one line in COMMANDS below,

    "name": ("package.module:attribute", "Its one-line help, the first sentence of its docstring."),

where the attribute is the click command, and its name in one section of
cli_help.COMMAND_SECTIONS (`--help` lists the commands by task). The one-line help is what
`tritonbisect --help` lists; tests/test_cli_lazy.py checks that it equals the command's own first sentence, and
that `--help` and `step` import none of the command modules.

The click group itself is in cli_group.py; `step` with a plain command line does not even
import click (commands/step.py).
"""

from __future__ import annotations

import sys
from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    import click

COMMANDS: dict[str, tuple[str, str]] = {
    # engine
    "run": ("tritonbisect.commands.engine:run_cmd", "Bisect REPO between GOOD and BAD with your own build and test commands."),
    "step": ("tritonbisect.commands.step_cli:step_cmd", "Build and test the current checkout once, for `git bisect run`."),
    "resume": ("tritonbisect.commands.engine:resume_cmd", "Continue an interrupted session (the latest when SESSION is omitted)."),
    "status": ("tritonbisect.commands.engine:status_cmd", "Show where a session stands (the latest when SESSION is omitted)."),
    "report": ("tritonbisect.commands.engine:report_cmd", "A report of a session: Markdown for a GitHub issue, or JSON."),
    "demo": ("tritonbisect.commands.engine:demo_cmd", "Bisect an embedded sample repository: a planted crash, a cluster that does not build."),
    # domains
    "triton": ("tritonbisect.commands.domains:triton_cmd", "Bisect Triton; a culprit that bumps LLVM is followed into llvm-project."),
    "llvm": ("tritonbisect.commands.domains:llvm_cmd", "Bisect llvm-project, building at each LLVM commit a Triton that builds against it."),
    "torch": ("tritonbisect.commands.domains:torch_cmd", "Bisect PyTorch, with the Triton each commit pins."),
    "pairs": ("tritonbisect.commands.domains:pairs_cmd", "Binary search over the map's (Triton, LLVM) pairs: the first bad pair."),
    "cache": ("tritonbisect.build.cache_cli:cache_group", "Built artifacts (wheels, LLVM installs) and recorded build failures."),
    # oracle
    "info": ("tritonbisect.commands.oracle:info", "Kernels, launches (id, grid, arguments), compile parameters, Triton version and target of a tritonparse trace (a file, or a folder of files)."),
    "repro": ("tritonbisect.commands.oracle:repro", "Write a standalone reproducer oracle (repro.py, context.json, blobs/) for one launch; with --mode compile, a compile oracle (compile_repro.py) that needs no GPU; with --launches, a whole-program replay (replay.py)."),
    "trace": ("tritonbisect.commands.oracle:trace", "Run a program with tracing in tritonparse's format, recording each launch's tensors before and (after a device sync) after the kernel ran: `tritonbisect trace --out DIR -- python app.py`."),
    "reduce": ("tritonbisect.commands.reduce:reduce_cmd", "Shrink a failing oracle's kernel and inputs while the good Triton passes and the bad one still fails the same way."),
    "narrow": ("tritonbisect.commands.narrow:narrow_cmd", "Name the compiler pass where the culprit's IR first differs from its parent's (cached builds, MLIR_ENABLE_DUMP=1)."),
    # hunt
    "hunt": ("tritonbisect.commands.hunt:hunt_cmd", "One night of CI regression hunting: test the head; bisect and report only what is new."),
    # corrections
    "mark": ("tritonbisect.commands.corrections:mark_cmd", "Correct a verdict: COMMIT is good, bad or to be skipped, whatever its tests said."),
    "undo": ("tritonbisect.commands.corrections:undo_cmd", "Take back a verdict (a mark, an answer given by hand, or a test's) with a new record."),
    "log": ("tritonbisect.commands.corrections:log_cmd", "The verdicts of a session in `git bisect log` form (`git bisect replay` takes it)."),
    "replay": ("tritonbisect.commands.corrections:replay_cmd", "Start a session from a `git bisect log`: its verdicts are kept, the search goes on."),
    # published builds
    "wheels": ("tritonbisect.commands.wheels:wheels_cmd", "Bisect published versions (releases, nightlies): installs only, no builds."),
    # clean-up
    "clean": ("tritonbisect.commands.clean:clean_cmd", "Remove a session (or --all) with its worktrees, pruned from your repository, and venvs."),
}


def load_command(name: str) -> click.Command:
    """Import the command `name` of COMMANDS."""
    import click

    module, _, attr = COMMANDS[name][0].partition(":")
    command = getattr(import_module(module), attr)
    if not isinstance(command, click.Command):  # pragma: no cover - a wrong table entry
        raise TypeError(f"{COMMANDS[name][0]} is not a click command")
    return command


def main(argv: list[str] | None = None) -> int:
    """Entry point: every TritonBisectError becomes one line on stderr and its exit code."""
    args = sys.argv[1:] if argv is None else list(argv)
    if args[:1] == ["step"]:
        # `git bisect run` starts `step` once per commit: a plain command line runs without
        # click; None means help or a usage error, which the click command answers
        from tritonbisect.commands.step import fast_main

        code = fast_main(args[1:])
        if code is not None:
            return code
    from tritonbisect.cli_group import root
    from tritonbisect.cli_main import run_cli

    return run_cli(root, "tritonbisect", argv)


def __getattr__(name: str) -> Any:
    if name in ("root", "LazyGroup"):  # the click group, for `from tritonbisect.cli import root`
        from tritonbisect import cli_group

        return getattr(cli_group, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if __name__ == "__main__":
    sys.exit(main())
