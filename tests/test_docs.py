"""README.md and docs/ cannot drift from the CLI or from what CI runs.

Every `tritonbisect` / `compat-builder` command in a fenced shell block must name real
subcommands and options (checked against the click command tree, not a copy of it), and
use an option's current name, not an old spelling kept as a hidden alias. The site builds
with `mkdocs build --strict`, which fails on a broken link or anchor. `.ci/run` runs
README's test command, in a fresh virtual environment.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import click
import pytest

from tritonbisect.cli.group import root as tritonbisect_root
from tritonbisect.commands.help_sections import AliasOption
from tritonbisect.compat_builder.cli import root as compat_root

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHELL_BLOCKS = {"", "sh", "bash", "shell", "console"}
PROGRAMS = {"tritonbisect": tritonbisect_root, "compat-builder": compat_root}
ENDS = {"&&", "||", ";", "|", "#"}


@dataclass
class Use:
    page: str
    line: int
    text: str
    tokens: list[str]


def shell_blocks(text: str) -> list[tuple[int, str]]:
    """(first line number, logical line) of each line of the fenced shell blocks, with
    backslash continuations joined."""
    out: list[tuple[int, str]] = []
    fence: str | None = None
    pending, start = "", 0
    for n, line in enumerate(text.splitlines(), 1):
        m = re.match(r"^\s*```(\S*)\s*$", line)
        if m and fence is None:
            fence = m.group(1)
            continue
        if m and fence is not None:
            fence = None
            continue
        if fence is None or fence not in SHELL_BLOCKS:
            continue
        if not pending:
            start = n
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        out.append((start, pending + line))
        pending = ""
    return out


def uses(path: Path) -> list[Use]:
    """The tritonbisect / compat-builder commands in one page's shell blocks."""
    found = []
    for n, line in shell_blocks(path.read_text(encoding="utf-8")):
        try:
            tokens = shlex.split(line, comments=False)
        except ValueError:  # an unbalanced quote in a prose-like line: not a command
            continue
        for i, tok in enumerate(tokens):
            if tok in PROGRAMS and (i == 0 or tokens[i - 1] in ENDS | {"run", "exec", "time"}):
                found.append(Use(path.name, n, line.strip(), tokens[i:]))
    return found


def problems(use: Use) -> list[str]:
    """What in one command line the CLI does not have."""
    command: click.Command = PROGRAMS[use.tokens[0]]
    path = [use.tokens[0]]
    errors = []
    depth = 0
    expect_subcommand = True
    for tok in use.tokens[1:]:
        if depth == 0 and tok in ENDS or tok == "--" or tok.startswith("#"):
            break
        depth += tok.count("[") - tok.count("]")
        word = tok.strip("[]")
        if not word or word == "...":
            continue
        if word.startswith("-") and len(word) > 1 and not word[1:2].isdigit():
            for alternative in word.split("|"):
                name = alternative.split("=", 1)[0]
                option = _option(command, name)
                if option is None:
                    errors.append(f"{' '.join(path)}: no option {name}")
                elif isinstance(option, AliasOption) and name in option.hidden_aliases:
                    shown = [o for o in option.opts if o not in option.hidden_aliases][0]
                    errors.append(f"{' '.join(path)}: {name} is an old spelling; write {shown}")
            continue
        if expect_subcommand and isinstance(command, click.Group):
            sub = command.get_command(click.Context(command), word)
            if sub is None:
                errors.append(f"{' '.join(path)}: no subcommand {word!r}")
                break
            command, path = sub, [*path, word]
            continue
        expect_subcommand = False  # an argument or an option's value
    return errors


def _option(command: click.Command, name: str) -> click.Option | None:
    for param in command.params:
        if isinstance(param, click.Option) and name in (*param.opts, *param.secondary_opts):
            return param
    if name in ("-h", "--help") or (name == "--version" and isinstance(command, click.Group)):
        return click.Option(["--help"])
    return None


ALL_USES = [u for page in PAGES for u in uses(page)]


def test_the_docs_show_commands_of_every_kind() -> None:
    # the parser finds the commands: a regression here would make the next test vacuous
    assert len(ALL_USES) > 40
    named = {u.tokens[1] for u in ALL_USES if len(u.tokens) > 1}
    assert {"run", "triton", "wheels", "llvm", "torch", "pairs", "hunt", "repro", "trace", "narrow",
            "fix", "map", "verify"} <= named
    readme = {u.tokens[1] for u in ALL_USES if u.page == "README.md"}
    assert {"trace", "wheels", "triton", "run", "fix"} <= readme


@pytest.mark.parametrize("use", ALL_USES, ids=[f"{u.page}:{u.line}" for u in ALL_USES])
def test_every_documented_command_exists(use: Use) -> None:
    assert problems(use) == [], use.text


def test_the_checker_catches_what_drifted() -> None:
    bad = [
        ("tritonbisect runn --good a --bad b", "no subcommand 'runn'"),
        ("tritonbisect run --good a --bad b --tset ./t.sh", "no option --tset"),
        ("tritonbisect triton --good a --bad b [--jobs 2] [--no-such-flag]", "no option --no-such-flag"),
        ("tritonbisect run ... --regress perf --threshold 5%", "--threshold is an old spelling; write --perf-threshold"),
        ("tritonbisect cache gc --max-size 50G --all", "no option --all"),
        ("compat-builder fix --llvm-commit L --llvm-repo x", "no option --llvm-repo"),
    ]
    for text, expected in bad:
        found = problems(Use("x.md", 1, text, shlex.split(text)))
        assert any(expected in p for p in found), (text, found)
    fine = ("tritonbisect mark [SESSION] COMMIT good|bad|skip [--why TEXT]",
            "tritonbisect trace --out trace/ -- python app.py --its --args",
            "tritonbisect report [SESSION] --format md      # Markdown")
    for text in fine:
        assert problems(Use("x.md", 1, text, shlex.split(text))) == [], text


def _mkdocs() -> list[str]:
    pytest.importorskip("mkdocs")
    # not -q: mkdocs counts the warnings it logs, so --strict -q lets a broken link pass
    return [sys.executable, "-m", "mkdocs", "build", "--strict"]


def test_the_site_builds_strictly_and_a_broken_link_fails_it(tmp_path: Path) -> None:
    site = tmp_path / "site"
    proc = subprocess.run([*_mkdocs(), "-f", str(ROOT / "mkdocs.yml"), "-d", str(site)],
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (site / "run" / "index.html").is_file() and (site / "published-wheels" / "index.html").is_file()

    copy = tmp_path / "copy"
    shutil.copytree(ROOT / "docs", copy / "docs")
    shutil.copy(ROOT / "mkdocs.yml", copy / "mkdocs.yml")
    for broken in ("[gone](no-such-page.md)", "[gone](run.md#no-such-section)"):
        page = copy / "docs" / "index.md"
        page.write_text(page.read_text() + f"\n{broken}\n")
        proc = subprocess.run([*_mkdocs(), "-d", str(tmp_path / "s2")], cwd=copy, capture_output=True,
                              text=True, timeout=300)  # fmt: skip
        assert proc.returncode != 0, broken
        page.write_text(page.read_text().replace(f"\n{broken}\n", ""))


def test_every_page_is_in_the_site_navigation() -> None:
    nav = (ROOT / "mkdocs.yml").read_text()
    for page in (ROOT / "docs").glob("*.md"):
        assert re.search(rf":\s*{re.escape(page.name)}\s*$", nav, re.M), page.name


def test_ci_runs_readmes_test_command_in_a_fresh_venv() -> None:
    readme = (ROOT / "README.md").read_text()
    block = readme.split("<!-- test-command -->", 1)[1].split("```sh\n", 1)[1].split("\n```", 1)[0]
    # what .ci/run extracts is exactly README's block
    script = (ROOT / ".ci" / "run").read_text()
    extract = re.search(r"cmd=\$\((awk .*)\)$", script, re.M)
    assert extract is not None
    got = subprocess.run(["bash", "-c", extract.group(1)], cwd=ROOT, capture_output=True, text=True, check=True)
    assert got.stdout.strip() == block.strip()
    assert block.startswith("python3 -m pip install -q torch==2.13.0 && ")
    for step in ("'.[test,trace,ray,ai,docs]'", "ruff check", "mkdocs build --strict &&", "pytest"):
        assert step in block
    assert 'python3 -m venv "$venv"' in script and '. "$venv/bin/activate"' in script
    assert "bash .ci/run" in (ROOT / ".github" / "workflows" / "ci.yml").read_text()
