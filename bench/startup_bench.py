#!/usr/bin/env python3
"""Start-up time of `tritonbisect --help` and `tritonbisect step` (which `git bisect run`
starts once per commit), against the interpreter's own start and plain git/bash.

    python bench/startup_bench.py                     # writes bench/RESULTS.md
    python bench/startup_bench.py --before 0ffef3c    # also the code of another revision
    python bench/startup_bench.py --runs 5 --no-write

Every command runs `--runs` times, the commands taking turns so that load on a shared
machine hits all of them alike; the table gives medians. The code measured is this
checkout's `src` (PYTHONPATH), byte-compiled first as `pip install` would (the
environment may set PYTHONDONTWRITEBYTECODE, and compiling at each start is not what an
installed tool pays). `tritonbisect` is run as the script setuptools generates for the
console entry point, with this interpreter. `step` builds and tests a commit of a small
generated history with trivial scripts; the same scripts run directly by bash are the
floor of what a step costs.

The table goes into the `## Start-up time` section of bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gitworld import git, make_world  # noqa: E402
from results_md import RESULTS, write_section  # noqa: E402

SECTION = "## Start-up time"
ROOT = Path(__file__).resolve().parent.parent
TARGET_S = 0.1

# what setuptools writes for `tritonbisect = "tritonbisect.cli:main"`
CONSOLE_SCRIPT = """#!{python}
# -*- coding: utf-8 -*-
import re
import sys
from tritonbisect.cli import main
if __name__ == '__main__':
    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])
    sys.exit(main())
"""
BUILD_SH = "mkdir -p out && cp state out/state\n"
TEST_SH = "grep -q ok out/state\n"


def extract(rev: str, dest: Path) -> Path:
    """The `src` tree of revision `rev` of this repository, in `dest`."""
    dest.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "src"], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)
    return dest / "src"


def compile_tree(src: Path) -> None:
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(src / "tritonbisect")],
                   check=True, stdout=subprocess.DEVNULL)


def time_once(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, int]:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                          stdin=subprocess.DEVNULL, check=False)
    return time.perf_counter() - t0, proc.returncode


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--before", metavar="REV", help="also measure the src of this revision")
    ap.add_argument("--no-write", action="store_true", help="print the table only")
    args = ap.parse_args(argv)

    tmp = Path(tempfile.mkdtemp(prefix="tb-startup-"))
    try:
        world = make_world(tmp / "repo", 8, seed=1, culprit=6)
        git(world.repo, "checkout", "-q", "--detach", world.good)
        scripts = tmp / "scripts"
        scripts.mkdir()
        (scripts / "build.sh").write_text(BUILD_SH)
        (scripts / "test.sh").write_text(TEST_SH)
        (scripts / "both.sh").write_text(f"bash {scripts / 'build.sh'} || exit 125\nbash {scripts / 'test.sh'}\n")
        script = tmp / "bin" / "tritonbisect"
        script.parent.mkdir()
        script.write_text(CONSOLE_SCRIPT.format(python=sys.executable))
        script.chmod(0o755)
        step_args = ["step", "--build", f"bash {scripts / 'build.sh'}", "--test",
                     f"bash {scripts / 'test.sh'}", "--workdir", str(tmp / "work")]

        trees = {"now": ROOT / "src"}
        if args.before:
            trees[f"before ({args.before})"] = extract(args.before, tmp / "before")
        for src in trees.values():
            compile_tree(src)
        base_env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        base_env["TERM"] = "dumb"

        def env_of(src: Path) -> dict[str, str]:
            return {**base_env, "PYTHONPATH": str(src)}

        rows: list[tuple[str, list[str], Path, dict[str, str], int]] = [
            ("python3 -c pass (the interpreter's own start)", [sys.executable, "-c", "pass"], tmp, base_env, 0),
            ("git --version", ["git", "--version"], tmp, base_env, 0),
            ("bash build.sh; bash test.sh (the step's own work)", ["bash", str(scripts / "both.sh")],
             world.repo, base_env, 0),
        ]
        for label, src in trees.items():
            rows += [
                (f"tritonbisect --help [{label}]", [str(script), "--help"], tmp, env_of(src), 0),
                (f"python -m tritonbisect.cli --help [{label}]",
                 [sys.executable, "-m", "tritonbisect.cli", "--help"], tmp, env_of(src), 0),
                (f"tritonbisect step [{label}]", [str(script), *step_args], world.repo, env_of(src), 0),
            ]
        on_path = shutil.which("tritonbisect")
        if on_path and Path(on_path).read_bytes()[:2] == b"#!" and b"bash" in Path(on_path).read_bytes()[:200]:
            # a version manager's shim (pyenv): what a user of it pays on top
            rows.append((f"tritonbisect --help via {on_path} (a shell shim)", [on_path, "--help"], tmp,
                         env_of(ROOT / "src"), 0))

        times: dict[str, list[float]] = {r[0]: [] for r in rows}
        for _ in range(args.runs):
            for label, cmd, cwd, env, want in rows:
                seconds, code = time_once(cmd, cwd, env)
                if code != want:
                    raise SystemExit(f"{label}: exit {code}, expected {want}")
                times[label].append(seconds)
        text = render(rows, times, args)
        print(text)
        if not args.no_write:
            write_section(SECTION, text)
            print(f"wrote {RESULTS}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


def render(rows, times: dict[str, list[float]], args) -> str:
    git_version = subprocess.run(["git", "--version"], capture_output=True, text=True).stdout.split()[-1]
    lines = [
        SECTION,
        "",
        f"Generated by `python bench/startup_bench.py{' --before ' + args.before if args.before else ''}` "
        f"on {datetime.date.today().isoformat()} (Python {platform.python_version()}, git {git_version}, "
        f"{platform.machine()}, {os.cpu_count()} CPUs, a shared machine). Medians of {args.runs} runs "
        "each, the commands taking turns. `tritonbisect` is the console script setuptools "
        "generates, run with this interpreter; the source is byte-compiled first, as an install "
        "does. `step` builds and tests one commit with trivial scripts (exit 0, good).",
        "",
        "| command | median s | min s | max s |",
        "|---|---:|---:|---:|",
    ]
    for label, *_ in rows:
        t = times[label]
        lines.append(f"| {label} | {statistics.median(t):.3f} | {min(t):.3f} | {max(t):.3f} |")
    help_now = statistics.median(times["tritonbisect --help [now]"])
    step_now = statistics.median(times["tritonbisect step [now]"])
    own = statistics.median(times["bash build.sh; bash test.sh (the step's own work)"])
    floor = statistics.median(times["python3 -c pass (the interpreter's own start)"])

    def mark(ok: bool) -> str:
        return "met" if ok else "**missed**"

    lines += [
        "",
        "Targets:",
        "",
        f"- `tritonbisect --help` ≤ {TARGET_S} s: {mark(help_now <= TARGET_S)} ({help_now:.3f} s; "
        f"the interpreter alone starts in {floor:.3f} s).",
        f"- `tritonbisect step` ≤ {TARGET_S} s: {mark(step_now <= TARGET_S)} ({step_now:.3f} s, of "
        f"which the build and test scripts themselves take about {own:.3f} s).",
        "",
        "`--help` imports click and the command table only (`tritonbisect.cli.table.COMMANDS`: name, "
        "module and one-line help); a command's module is imported when it runs. `step` lives in "
        "its own module and imports the step runner, not GitPython, rich or the domain "
        "bisectors (tests/test_cli_lazy.py checks both through sys.modules).",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
