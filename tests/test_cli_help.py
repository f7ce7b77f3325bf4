"""`--help` by task, every option explained, consistent option names (old spellings still
parse), `compat-builder --version`, and the Anthropic SDK as an extra."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import click
import pytest

from tritonbisect import __version__
from tritonbisect.cli import COMMANDS
from tritonbisect.cli.group import root as tritonbisect_root
from tritonbisect.commands.help_sections import (
    COMMAND_SECTIONS,
    OPTION_SECTIONS,
    OTHER,
    AliasOption,
    option_sections,
)
from tritonbisect.compat_builder.cli import root as compat_root

SRC = Path(__file__).resolve().parents[1] / "src"
STANDALONE = SRC / "tritonbisect" / "oracles" / "compile" / "standalone"


def _walk(command: click.Command, path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    yield path, command
    if isinstance(command, click.Group):
        ctx = click.Context(command)
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            assert sub is not None, name
            yield from _walk(sub, (*path, name))


ALL = [*_walk(tritonbisect_root, ("tritonbisect",)), *_walk(compat_root, ("compat-builder",))]
LEAVES = [(path, cmd) for path, cmd in ALL if not isinstance(cmd, click.Group)]


def _help(path: tuple[str, ...]) -> str:
    env = {**os.environ, "PYTHONPATH": str(SRC), "COLUMNS": "100"}
    module = "tritonbisect.cli" if path[0] == "tritonbisect" else "tritonbisect.compat_builder.cli"
    proc = subprocess.run([sys.executable, "-m", module, *path[1:], "--help"], capture_output=True,
                          text=True, env=env, timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_every_option_of_every_command_has_a_help_text() -> None:
    missing = [f"{' '.join(path)} {p.opts[0]}" for path, cmd in ALL for p in cmd.params
               if isinstance(p, click.Option) and not p.hidden and not (p.help or "").strip()]
    assert missing == []
    assert len(LEAVES) > 25  # the walk reached the lazily loaded commands and the cache group


def test_every_command_is_in_one_section_of_the_root_help() -> None:
    placed = [name for _, names in COMMAND_SECTIONS for name in names]
    assert sorted(placed) == sorted(COMMANDS)  # each once


def test_the_sections_name_known_parameters_once() -> None:
    names = [n for _, members in OPTION_SECTIONS for n in members]
    assert len(names) == len(set(names))
    known = {p.name for _, cmd in ALL for p in cmd.params}
    assert set(names) - known == set()


@pytest.mark.parametrize("path", [path for path, _ in LEAVES], ids=[" ".join(p) for p, _ in LEAVES])
def test_sectioned_help_loses_no_option(path: tuple[str, ...]) -> None:
    command = dict(LEAVES)[path]
    text = _help(path)
    ctx = click.Context(command, info_name=path[-1])
    shown = [p for _, params in option_sections(command, ctx) for p in params]
    visible = [p for p in command.get_params(ctx) if isinstance(p, click.Option) and not p.hidden]
    assert sorted(p.name or "" for p in shown) == sorted(p.name or "" for p in visible)
    for param in visible:
        record = param.get_help_record(ctx)
        assert record is not None and record[0].split()[0].rstrip(",") in text, param.name


def test_run_help_puts_the_essentials_first_and_ray_last() -> None:
    text = _help(("tritonbisect", "run"))
    headings = [line[:-1] for line in text.splitlines() if line.endswith(":") and not line.startswith(" ")]
    assert headings[:2] == ["What to work on", "Build and test"]
    assert headings[-1] == "Output and state" and OTHER not in headings
    for earlier, later in (("--good", "--build"), ("--test", "--repro"), ("--test", "--executor"),
                           ("--regress", "--flaky"), ("--repro", "--perf-threshold")):
        assert text.index(earlier) < text.index(later), (earlier, later)
    # a command with few options keeps one plain section
    assert "\nOptions:\n" in _help(("tritonbisect", "status"))


@pytest.mark.parametrize(("path", "new", "old", "value", "dest"), [
    (("tritonbisect", "run"), "--perf-threshold", "--threshold", "7%", "threshold"),
    (("tritonbisect", "hunt"), "--perf-threshold", "--threshold", "7%", "threshold"),
    (("tritonbisect", "repro"), "--compile-target", "--target", "cuda:90", "target"),
])
def test_a_renamed_option_keeps_its_old_spelling_hidden(path, new, old, value, dest) -> None:
    command = dict(LEAVES)[path]
    option = next(p for p in command.params if p.name == dest)
    assert isinstance(option, AliasOption) and option.hidden_aliases == (old,)
    text = _help(path)
    assert new in text and f"{old} " not in text
    for spelling in (new, old):
        ctx = command.make_context(path[-1], [spelling, value], resilient_parsing=True)
        assert ctx.params[dest] == value


def test_the_compile_oracle_script_takes_both_spellings() -> None:
    code = ("import compile_repro as c; a = c.parse_args(['--threshold', 'spills=0', '--codegen-threshold', "
            "'regs=5%', '--target', 'cuda:80']); b = c.parse_args(['--compile-target', 'hip:gfx942']); "
            "print(a.threshold, a.target, b.threshold, b.target)")
    proc = subprocess.run([sys.executable, "-c", code], cwd=STANDALONE, capture_output=True, text=True,
                          timeout=60)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["['spills=0',", "'regs=5%']", "cuda:80", "[]", "hip:gfx942"]


def test_compat_builder_version() -> None:
    proc = subprocess.run([sys.executable, "-m", "tritonbisect.compat_builder.cli", "--version"],
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(SRC)})  # fmt: skip
    assert proc.returncode == 0 and proc.stdout.strip() == f"compat-builder, version {__version__}"


def test_root_help_uses_no_deprecated_click_api() -> None:
    # click 8.5 deprecates make_default_short_help (gone in click 9): the root help must not use it
    proc = subprocess.run([sys.executable, "-W", "error::DeprecationWarning", "-m", "tritonbisect.cli", "--help"],
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(SRC)})  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "Bisect REPO between GOOD and BAD" in proc.stdout


def _site_without_anthropic(tmp_path: Path) -> Path:
    """A site directory holding every installed distribution but the Anthropic SDK."""
    import anthropic  # the test extra has it: this is what is left out

    site = Path(anthropic.__file__).resolve().parents[1]
    out = tmp_path / "site"
    out.mkdir()
    for entry in site.iterdir():
        if not entry.name.lower().startswith("anthropic") and entry.name != "tritonbisect":
            (out / entry.name).symlink_to(entry)
    return out


def test_ai_anthropic_without_the_sdk_is_one_line_naming_the_extra(tmp_path: Path) -> None:
    site = _site_without_anthropic(tmp_path)
    env = {**os.environ, "PYTHONPATH": f"{SRC}:{site}", "PYTHONNOUSERSITE": "1", "ANTHROPIC_API_KEY": "x"}
    # -S: no site-packages but the ones above, so `anthropic` truly is not installed
    base = [sys.executable, "-S", "-m", "tritonbisect.compat_builder.cli"]
    work = tmp_path / "not-a-repo"
    work.mkdir()
    for argv in (["fix", "--llvm-commit", "abc", "--ai", "anthropic"], ["fix", "--llvm-commit", "abc"],
                 ["map", "--bump", "abc"]):
        proc = subprocess.run([*base, *argv, "--workdir", str(tmp_path / "home")], cwd=work,
                              capture_output=True, text=True, env=env, timeout=120)  # fmt: skip
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.strip().splitlines() == [
            "compat-builder: error: --ai anthropic needs the Anthropic SDK, which is not installed: "
            "pip install 'tritonbisect[ai]' (or use --ai claude-cli or --ai none)"]
        assert not (tmp_path / "home").exists()  # nothing was made before the check
    # the other fixers do not need it: the same command goes on to its own input checks
    proc = subprocess.run([*base, "fix", "--llvm-commit", "abc", "--ai", "none", "--workdir", str(tmp_path / "h2")],
                          cwd=work, capture_output=True, text=True, env=env, timeout=120)  # fmt: skip
    assert proc.returncode == 2 and "Anthropic SDK" not in proc.stderr and "Traceback" not in proc.stderr
    # and a plain install no longer pulls it in: it is the `ai` extra
    pyproject = (SRC.parent / "pyproject.toml").read_text()
    core = pyproject.split("\ndependencies = [", 1)[1].split("]", 1)[0]
    assert "anthropic" not in core.lower()
    assert '\nai = ["anthropic>=' in pyproject


@pytest.mark.parametrize("path", [path for path, _ in LEAVES], ids=[" ".join(p) for p, _ in LEAVES])
def test_every_option_has_a_section_of_its_task(path: tuple[str, ...]) -> None:
    # "Other options" once held --verify-revert, --prefer-pass and --log-limit: a new option
    # gets its place in help_sections.OPTION_SECTIONS
    command = dict(LEAVES)[path]
    titles = [title for title, _ in option_sections(command, click.Context(command, info_name=path[-1]))]
    assert OTHER not in titles, path
