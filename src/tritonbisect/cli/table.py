"""The commands of `tritonbisect`: where each lives and its one-line help (see the package's
docstring for why the root knows them only by name). A domain's commands live in its
`domains/<name>/command.py`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tritonbisect.core.refs import resolve

if TYPE_CHECKING:  # pragma: no cover
    import click

COMMANDS: dict[str, tuple[str, str]] = {
    # engine
    "run": ("tritonbisect.domains.command.command:run_cmd", "Bisect REPO between GOOD and BAD with your own build and test commands."),
    "step": ("tritonbisect.commands.step_cli:step_cmd", "Build and test the current checkout once, for `git bisect run`."),
    "resume": ("tritonbisect.commands.engine:resume_cmd", "Continue an interrupted session (the latest when SESSION is omitted)."),
    "status": ("tritonbisect.commands.engine:status_cmd", "Show where a session stands (the latest when SESSION is omitted)."),
    "report": ("tritonbisect.commands.engine:report_cmd", "A report of a session: Markdown for a GitHub issue, or JSON."),
    "demo": ("tritonbisect.commands.engine:demo_cmd", "Bisect an embedded sample repository: a planted crash, a cluster that does not build."),
    # domains
    "triton": ("tritonbisect.domains.triton.command:triton_cmd", "Bisect Triton; a culprit that bumps LLVM is followed into llvm-project."),
    "llvm": ("tritonbisect.domains.llvm.command:llvm_cmd", "Bisect llvm-project, building at each LLVM commit a Triton that builds against it."),
    "torch": ("tritonbisect.domains.torch.command:torch_cmd", "Bisect PyTorch, with the Triton each commit pins."),
    "pairs": ("tritonbisect.domains.llvm.command:pairs_cmd", "Binary search over the map's (Triton, LLVM) pairs, then over the first bad pair's LLVM range."),
    "cache": ("tritonbisect.commands.artifact_cache:cache_group", "Built artifacts (wheels, LLVM installs), downloaded wheels and recorded build failures."),
    # oracle
    "info": ("tritonbisect.commands.oracle:info", "Kernels, launches (id, grid, arguments), compile parameters, Triton version and target of a tritonparse trace (a file, or a folder of files), or of what PyTorch and Triton wrote while debugging: Inductor output code, a TORCH_COMPILE_DEBUG or TORCH_TRACE folder, a TRITON_KERNEL_DUMP folder, an MLIR reproducer (told by content)."),
    "repro": ("tritonbisect.commands.oracle:repro", "Write a standalone reproducer oracle (repro.py, context.json, blobs/) for one launch; with --mode compile, a compile oracle (compile_repro.py) that needs no GPU; with --launches, a whole-program replay (replay.py)."),
    "trace": ("tritonbisect.commands.oracle:trace", "Run a program with tracing in tritonparse's format, recording each launch's tensors before and (after a device sync) after the kernel ran: `tritonbisect trace --out DIR -- python app.py`."),
    "reduce": ("tritonbisect.commands.reduce:reduce_cmd", "Shrink a failing oracle's kernel and inputs while the good Triton passes and the bad one still fails the same way."),
    "workaround": ("tritonbisect.commands.workaround:workaround_cmd", "Find the changes (launch options, configs, Triton's own switches) that make the bad Triton pass ORACLE_DIR."),
    "narrow": ("tritonbisect.commands.narrow:narrow_cmd", "Name the compiler pass where the culprit's IR first differs from its parent's (cached builds, MLIR_ENABLE_DUMP=1), or with --time the one whose compile time grew most."),
    # hunt
    "hunt": ("tritonbisect.commands.hunt:hunt_cmd", "One night of CI regression hunting: test the head; bisect and report only what is new."),
    # corrections
    "mark": ("tritonbisect.commands.marks:mark_cmd", "Correct a verdict: COMMIT is good, bad or to be skipped, whatever its tests said."),
    "undo": ("tritonbisect.commands.marks:undo_cmd", "Take back a verdict (a mark, an answer given by hand, or a test's) with a new record."),
    "log": ("tritonbisect.commands.marks:log_cmd", "The verdicts of a session in `git bisect log` form (`git bisect replay` takes it)."),
    "replay": ("tritonbisect.commands.marks:replay_cmd", "Start a session from a `git bisect log`: its verdicts are kept, the search goes on."),
    # published builds
    "wheels": ("tritonbisect.domains.wheels.command:wheels_cmd", "Bisect published versions (releases, nightlies): installs only, no builds."),
    # clean-up
    "clean": ("tritonbisect.commands.clean:clean_cmd", "Remove a session (or --all) with its worktrees, pruned from your repository, and venvs."),
}


def load_command(name: str) -> click.Command:
    """Import the command `name` of COMMANDS."""
    import click

    command = resolve(COMMANDS[name][0])
    if not isinstance(command, click.Command):  # pragma: no cover - a wrong table entry
        raise TypeError(f"{COMMANDS[name][0]} is not a click command")
    return command
