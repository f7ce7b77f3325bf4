"""The lazy command table of `tritonbisect.cli`: complete, in step with the commands' own
help, and `--help` / `step` import none of the heavy modules (behaviour, not timing; the
timing is bench/startup_bench.py's)."""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys
from importlib import import_module
from pathlib import Path

import click
import pytest

import tritonbisect.commands
import tritonbisect.domains
from engine_repo import env_for, git, linear
from tritonbisect.cli import COMMANDS, load_command
from tritonbisect.commands.help_sections import COMMAND_SECTIONS

# What `--help` and `step` must not import: the command modules (other than step's own), the
# domains (but the command recipe step runs), GitPython, rich, the LLM client and tenacity.
HEAVY = ("git", "rich", "anthropic", "tenacity", "tritonbisect.session.session",
         "tritonbisect.core.history")
STEP_MODULES = {"tritonbisect.commands", "tritonbisect.commands.step",
                "tritonbisect.core.step_args", "tritonbisect.domains",
                "tritonbisect.domains.command", "tritonbisect.domains.command.recipe"}

PROBE = """
import json, sys
from tritonbisect.cli import main
code = main(sys.argv[2:])
heavy = sorted(m for m in sys.modules
               if m.split(".")[0] in {"git", "rich", "anthropic", "tenacity", "click"}
               or m.startswith(("tritonbisect.commands", "tritonbisect.domains"))
               or m.startswith("tritonbisect.builds."))
with open(sys.argv[1], "w") as out:
    json.dump({"code": code, "modules": heavy}, out)
"""


def _probe(args: list[str], tmp_path: Path, cwd: Path) -> tuple[dict, subprocess.CompletedProcess[str]]:
    out = tmp_path / "probe.json"
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, str(out), *args], cwd=cwd, env=env_for(tmp_path / "home"),
        capture_output=True, text=True, timeout=60, check=False,
    )
    assert out.exists(), proc.stderr
    return json.loads(out.read_text()), proc


def _heavy(modules: list[str]) -> list[str]:
    return [m for m in modules if m.split(".")[0] in HEAVY or m in HEAVY
            or (m.startswith(("tritonbisect.commands", "tritonbisect.domains")) and m not in STEP_MODULES)]


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_table_entry_matches_the_command(name: str) -> None:
    command = load_command(name)
    assert isinstance(command, click.Command)
    assert command.name == name
    # the table's one-line help is the command's own: it cannot drift
    assert COMMANDS[name][1] == command.get_short_help_str(limit=10**6)


def _command_modules() -> list[str]:
    """The modules of `commands`, and the `command` module of each domain."""
    modules = [f"tritonbisect.commands.{m.name}"
               for m in pkgutil.iter_modules(tritonbisect.commands.__path__)]
    for domain in pkgutil.iter_modules(tritonbisect.domains.__path__):
        package = import_module(f"tritonbisect.domains.{domain.name}")
        if any(m.name == "command" for m in pkgutil.iter_modules(package.__path__)):
            modules.append(f"tritonbisect.domains.{domain.name}.command")
    return modules


def test_every_command_module_is_in_the_table() -> None:
    """A command added to a module's COMMANDS list but not to the table would be unreachable."""
    seen = set()
    modules = _command_modules()
    assert {"tritonbisect.domains.triton.command", "tritonbisect.domains.wheels.command"} <= set(modules)
    for module_name in modules:
        for command in getattr(import_module(module_name), "COMMANDS", []):
            assert command.name in COMMANDS, f"{command.name} ({module_name}) is not in cli.COMMANDS"
            assert load_command(command.name) is command
            seen.add(command.name)
    assert seen == set(COMMANDS)


def test_help_lists_every_command_without_importing_them(tmp_path: Path) -> None:
    got, proc = _probe(["--help"], tmp_path, tmp_path)
    assert got["code"] == 0
    # by task (commands.help_sections.COMMAND_SECTIONS): each section's heading, then its commands
    listing = proc.stdout.split("-h, --help")[1].splitlines()[1:]
    listed = [line.split()[0] for line in listing if line.startswith("  ")]
    headings = [line[:-1] for line in listing if line.strip() and not line.startswith(" ")]
    assert headings == [title for title, _ in COMMAND_SECTIONS]
    assert listed == [name for _, names in COMMAND_SECTIONS for name in names]
    assert sorted(listed) == sorted(COMMANDS)
    # click and the sections' layout (click alone), not one command module, nor the bisect core
    layout = {"tritonbisect.commands", "tritonbisect.commands.help_sections"}
    assert [m for m in got["modules"] if m.split(".")[0] != "click" and m not in layout] == []
    assert "Find the commit that broke a Triton kernel" in proc.stdout


def test_one_command_help_imports_only_that_command(tmp_path: Path) -> None:
    got, proc = _probe(["status", "--help"], tmp_path, tmp_path)
    assert got["code"] == 0 and "Show where a session stands" in proc.stdout
    assert "tritonbisect.commands.engine" in got["modules"]
    assert not [m for m in got["modules"] if m.startswith("tritonbisect.domains.")]
    assert not [m for m in got["modules"] if m.split(".")[0] in HEAVY]


def test_step_imports_no_heavy_module_and_keeps_its_exit_codes(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shas = linear(repo, 4, culprit=2)
    build = "mkdir -p out; cp state out/state"
    for sha, code in ((shas[0], 0), (shas[3], 1)):
        git(repo, "checkout", "-q", "--detach", sha)
        got, proc = _probe(["step", "--build", build, "--test", "grep -q ok out/state"], tmp_path, repo)
        assert got["code"] == code, proc.stderr
        assert _heavy(got["modules"]) == [], got["modules"]
        assert "click" not in got["modules"]  # a plain step command line runs without click
        assert f"-> {'good' if code == 0 else 'bad'} (exit {code})" in proc.stderr
    # the same options in --opt=value form, with --env and --repeat
    got, proc = _probe(["step", f"--build={build}", "--test=grep -q ok out/state", "--env=A=1",
                        "--repeat=2", "--regress=fail", f"--workdir={tmp_path / 'w'}"], tmp_path, repo)
    assert got["code"] == 1 and "(2 of 2 runs agree)" in proc.stderr, proc.stderr
    assert "click" not in got["modules"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--test", "true", "--bogus"], "--bogus"),
        (["--build", "true"], "--test"),
        (["--test", "true", "--repeat", "x"], "'x' is not a valid integer"),
        (["--test", "true", "--timeout=soon"], "'soon' is not a valid float"),
        (["--test", "true", "--regress", "worse"], "worse"),
        (["--test", "true", "--on-build-failure", "retry"], "retry"),
        (["--test"], "--test"),
        (["--test", "true", "extra"], "extra"),
        (["--test", "true", "--repeat", "0"], "--repeat must be at least 1"),
        (["--test", "true", "--env", "NOEQUALS"], "--env expects KEY=VALUE"),
    ],
)
def test_step_usage_errors_abort_with_128_and_clicks_message(tmp_path: Path, args, message) -> None:
    repo = tmp_path / "repo"
    linear(repo, 2, culprit=1)
    got, proc = _probe(["step", *args], tmp_path, repo)
    assert got["code"] == 128, proc.stderr
    assert message in proc.stderr and "(exit 128: abort)" in proc.stderr
    assert proc.stderr.count("\n") == 1  # one line, no traceback


def test_step_help_comes_from_the_click_command(tmp_path: Path) -> None:
    got, proc = _probe(["step", "--help"], tmp_path, tmp_path)
    assert got["code"] == 0
    assert "Build and test the current checkout once" in proc.stdout
    assert "--on-build-failure [skip|abort|bad]" in proc.stdout


def test_unknown_command_is_a_usage_error(tmp_path: Path) -> None:
    got, proc = _probe(["frobnicate"], tmp_path, tmp_path)
    assert got["code"] == 2
    assert "No such command 'frobnicate'" in proc.stderr


def test_python_dash_m_tritonbisect(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "tritonbisect", "--version"], capture_output=True,
                          text=True, env=env_for(tmp_path), check=False, timeout=60)
    assert proc.returncode == 0 and "tritonbisect, version" in proc.stdout
