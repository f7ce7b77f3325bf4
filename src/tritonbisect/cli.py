"""The `tritonbisect` command: a thin click root that loads each command only when it runs.

`git bisect run` starts `tritonbisect step` once per step, and `--help` should answer at
once: importing every command module (GitPython, rich, the domain bisectors) cost about
0.2 s per start. The root therefore knows its commands only by name, where they live and
their one-line help, and imports a command's module when that command is invoked (or its
own `--help` is asked for).

Adding a command: one line in COMMANDS below,

    "name": ("package.module:attribute", "Its one-line help, the first sentence of its docstring."),

where the attribute is the click command. The one-line help is what `tritonbisect --help`
lists; tests/test_cli_lazy.py checks that it equals the command's own first sentence, and
that `--help` and `step` import none of the command modules.
"""

from __future__ import annotations

import sys
from importlib import import_module

import click

from tritonbisect import __version__
from tritonbisect.cli_main import run_cli

COMMANDS: dict[str, tuple[str, str]] = {
    # engine
    "run": ("tritonbisect.commands.engine:run_cmd", "Bisect REPO between GOOD and BAD with your own build and test commands."),
    "step": ("tritonbisect.commands.step:step_cmd", "Build and test the current checkout once, for `git bisect run`."),
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
    "repro": ("tritonbisect.commands.oracle:repro", "Write a standalone reproducer oracle (repro.py, context.json, blobs/) for one launch; with --mode compile, a compile oracle (compile_repro.py) that needs no GPU."),
    "trace": ("tritonbisect.commands.oracle:trace", "Run a program with tracing in tritonparse's format, recording each launch's tensors before and (after a device sync) after the kernel ran: `tritonbisect trace --out DIR -- python app.py`."),
    # hunt
    "hunt": ("tritonbisect.commands.hunt:hunt_cmd", "One night of CI regression hunting: test the head; bisect and report only what is new."),
    # corrections
    "mark": ("tritonbisect.commands.corrections:mark_cmd", "Correct a verdict: COMMIT is good, bad or to be skipped, whatever its tests said."),
    "undo": ("tritonbisect.commands.corrections:undo_cmd", "Take back a verdict (a mark, an answer given by hand, or a test's) with a new record."),
    "log": ("tritonbisect.commands.corrections:log_cmd", "The verdicts of a session in `git bisect log` form (`git bisect replay` takes it)."),
    "replay": ("tritonbisect.commands.corrections:replay_cmd", "Start a session from a `git bisect log`: its verdicts are kept, the search goes on."),
    # clean-up
    "clean": ("tritonbisect.commands.clean:clean_cmd", "Remove a session (or --all) with its worktrees, pruned from your repository, and venvs."),
}


def load_command(name: str) -> click.Command:
    """Import the command `name` of COMMANDS."""
    module, _, attr = COMMANDS[name][0].partition(":")
    command = getattr(import_module(module), attr)
    if not isinstance(command, click.Command):  # pragma: no cover - a wrong table entry
        raise TypeError(f"{COMMANDS[name][0]} is not a click command")
    return command


class LazyGroup(click.Group):
    """A group whose commands are imported on first use, listed in `--help` from COMMANDS."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*COMMANDS, *self.commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            self.commands[cmd_name] = load_command(cmd_name)
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        from click.utils import make_default_short_help

        names = self.list_commands(ctx)
        if not names:
            return
        # the same layout as click's own listing, without importing the commands
        limit = formatter.width - 6 - max(len(n) for n in names)
        rows = []
        for name in names:
            if name in COMMANDS:
                text = make_default_short_help(COMMANDS[name][1], limit)
            else:
                text = self.commands[name].get_short_help_str(limit)
            rows.append((name, text))
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="tritonbisect")
def root() -> None:
    """Find the commit that broke a Triton kernel, with as few builds as possible."""


def main(argv: list[str] | None = None) -> int:
    """Entry point: every TritonBisectError becomes one line on stderr and its exit code."""
    return run_cli(root, "tritonbisect", argv)


if __name__ == "__main__":
    sys.exit(main())
