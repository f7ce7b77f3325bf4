"""The rough edges a new user met in the first hour, each checked through the CLI as the user
typed it (a sibling of test_first_hour.py). One test per item of the list:

- the docs site's tables show `\\|` literally
- the live line keeps stopped steps under "testing" with --jobs 2
- `cache list` and `cache gc` ignore the downloaded wheels (1.5 GB)
- `--help` puts headline features under "Other options"; `wheels --help` offers options that
  mean nothing for versions
- `repro --ir` names `--target` for `--compile-target`; errors name `--threshold` for
  `--perf-threshold`
- a codegen verdict is labelled `perf`
- `repro` has no default `--out`
- an empty journal still reports "Bisected"
- one broken session blocks the bare `status`/`report`/`resume`; `clean SESSION` refuses it
- reversed endpoints print each sha twice
- `demo` ends without the next command to try
- (README's first way in, `wheels --repro` without torch, and the wheels report in versions:
  tests/test_wheels_report.py; `reduce` progress on stderr and issue.py's expected-versus-actual
  line, no literal of a large tensor: tests/test_reduce_releases.py)
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from bisectors_world import run_cli
from engine_repo import BUILD, TEST, env_for, linear, tb
from oracle_support import scenario

ROOT = Path(__file__).resolve().parents[1]


def test_no_table_of_the_docs_or_the_readme_escapes_a_pipe() -> None:
    # GitHub wants `\|` in a table's code span, mkdocs shows it as it is: neither is written
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for n, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            if line.lstrip().startswith("|"):
                assert "\\|" not in line, f"{page.name}:{n}: {line}"


def test_the_site_shows_option_values_without_a_backslash(tmp_path: Path) -> None:
    pytest.importorskip("mkdocs")
    site = tmp_path / "site"
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml"),
                           "-d", str(site)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    page = (site / "run" / "index.html").read_text(encoding="utf-8")
    assert "<code>--on-build-failure skip/abort/bad</code>" in page
    for html in site.rglob("*.html"):
        assert "\\|" not in html.read_text(encoding="utf-8"), html


def test_the_live_line_drops_a_step_once_it_is_stopped(tmp_path: Path) -> None:
    pexpect = pytest.importorskip("pexpect")
    repo, home = tmp_path / "r", tmp_path / "home"
    shas = linear(repo, 40, culprit=8)
    # with --jobs 2 the first batch is ~13 and ~26: 13 is bad at once, and 26, which sleeps,
    # no longer matters: it is stopped. The other steps take long enough for the line to be drawn.
    slow = " ".join(shas[20:39])
    test = f'case " {slow} " in *" $TRITONBISECT_COMMIT "*) sleep 30;; *) sleep 0.6;; esac; {TEST}'
    child = pexpect.spawn(sys.executable, ["-m", "tritonbisect.cli", "run", "--repo", str(repo), "--good", shas[0],
                                           "--bad", "main", "--build", BUILD, "--test", test, "--jobs", "2"],
                          cwd=str(repo), env=env_for(home, TERM="xterm-256color", COLUMNS="200"),
                          encoding="utf-8", timeout=120, dimensions=(50, 200))
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, child.before
    lines = [ln for ln in re.split(r"[\r\n]+", re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", child.before)) if ln.strip()]
    at = next(i for i, ln in enumerate(lines) if "its verdict no longer matters" in ln)
    stopped = re.search(r"stopped testing (\S+):", lines[at]).group(1)
    left = min(int(m.group(1)) for ln in lines[:at] if (m := re.search(r"\| (\d+) left,", ln)))
    # the live line drawn once a later verdict narrowed the range (a redraw of the line as it
    # was before the stop may follow a printed line for a quarter of a second: not those)
    later = [ln for ln in lines[at:] if "| testing " in ln
             and (m := re.search(r"range left (\d+) commits", ln)) and int(m.group(1)) < left]
    assert later, lines
    assert not any(stopped in ln.split("| testing ", 1)[1] for ln in later), later


def test_cache_list_and_gc_count_the_downloaded_wheels(tmp_path: Path, capsys) -> None:
    from tritonbisect.builds.wheel_fetch import fetch_wheel
    from wheel_index_world import write_wheel

    home = tmp_path / "home"
    for i, version in enumerate(("3.1.0", "3.2.0", "3.3.0")):
        wheel = write_wheel(tmp_path / "w", version, bad=False)
        fetched = fetch_wheel(wheel.as_uri(), wheel.name, None, home / "cache")  # as `wheels` keeps them
        again = fetch_wheel(wheel.as_uri(), wheel.name, None, home / "cache")  # --find-links, a second step
        assert fetched.downloaded and not again.downloaded and again.path == fetched.path
        used = 1_700_000_000 + i * 1000  # 3.1.0 used least recently
        os.utime(fetched.path.parent, (used, used))
    code, out, _ = run_cli(["cache", "list", "--workdir", str(home)], capsys)
    assert code == 0 and "empty" not in out
    assert "3 downloaded wheels" in out and "triton-3.2.0-py3-none-any.whl" in out
    size = next((home / "cache" / "downloads").rglob("triton-3.3.0-*.whl")).stat().st_size
    code, out, _ = run_cli(["cache", "gc", "--max-size", str(2 * size + 10), "--workdir", str(home)], capsys)
    assert code == 0 and "removed triton-3.1.0-py3-none-any.whl" in out and "3.2.0" not in out
    left = sorted(p.name for p in (home / "cache" / "downloads").rglob("*.whl"))
    assert left == ["triton-3.2.0-py3-none-any.whl", "triton-3.3.0-py3-none-any.whl"]


def test_the_headline_options_have_a_section_of_their_own(capsys) -> None:
    code, out, _ = run_cli(["run", "--help"], capsys)
    section = out.split("Where to look, and checking the answer:", 1)[1].split("\n\n", 1)[0]
    for option in ("--verify-revert", "--prefer-pass", "--prefer-files", "--reduce"):
        assert option in section, option
    assert "--log-limit" in out.split("Output and state:", 1)[1]


def test_wheels_help_speaks_of_versions_and_refuses_what_is_for_commits(tmp_path: Path, capsys) -> None:
    code, out, _ = run_cli(["wheels", "--help"], capsys)
    assert code == 0
    for option in ("--prefer-pass", "--prefer-files", "--first-parent", "--verify-revert", "--repo-url",
                   "--cache-dir", "--cache-url"):
        assert option not in out, option
    assert "run in the checkout of each commit" not in out and "each version installed" in out
    for given in (["--first-parent"], ["--verify-revert"], ["--cache-dir", str(tmp_path)]):
        code, out, err = run_cli(["wheels", "--good", "3.0.0", "--bad", "3.1.0", "--test", "true",
                                  "--workdir", str(tmp_path / "home"), *given], capsys)
        assert code == 2 and err.count("\n") == 1 and f"{given[0]} applies to commits" in err, err
        assert not (tmp_path / "home").exists()


def test_errors_name_the_options_as_help_shows_them(tmp_path: Path, capsys) -> None:
    ttgir = tmp_path / "k.ttgir"
    ttgir.write_text("module {}\n")
    code, _, err = run_cli(["repro", "--ir", str(ttgir), "--out", str(tmp_path / "o")], capsys)
    assert code == 2 and "--ir FILE needs --compile-target" in err
    code, _, err = run_cli(["repro", "--ir", str(ttgir), "--compile-target", "cuda:sm90", "--out",
                            str(tmp_path / "o")], capsys)
    assert code == 2 and "--compile-target 'cuda:sm90'" in err
    repo, shas = tmp_path / "r", linear(tmp_path / "r", 4, culprit=2)
    for given, said in ((["--perf-threshold", "5%"], "--perf-threshold goes with --regress perf"),
                        (["--threshold", "5%"], "--perf-threshold goes with --regress perf"),
                        (["--regress", "perf", "--perf-threshold", "lots"], "--perf-threshold 'lots'")):
        code, _, err = run_cli(["run", "--repo", str(repo), "--good", shas[0], "--bad", "main", "--test", "true",
                                "--workdir", str(tmp_path / "home"), *given], capsys)
        assert code == 2 and said in err, err
        assert "--threshold" not in err.replace("--perf-threshold", "")


def test_a_codegen_verdict_is_labelled_codegen(tmp_path: Path) -> None:
    repo, home = tmp_path / "r", tmp_path / "home"
    shas = linear(repo, 12, culprit=7)
    # what a compile oracle writes under --check codegen when a statistic moved
    test = (f'if {TEST}; then exit 0; fi; echo \'{{"status": "codegen", "reason": "spills 0 -> 2"}}\' '
            '> "$TRITONBISECT_RESULT"; exit 1')
    proc = tb("run", "--repo", str(repo), "--good", shas[0], "--bad", "main", "--build", BUILD, "--test", test,
              cwd=repo, home=home)
    assert proc.returncode == 0, proc.stderr
    assert "BAD   codegen" in proc.stderr and " perf " not in proc.stderr


def test_repro_writes_into_a_new_folder_of_its_own_without_out(tmp_path: Path, monkeypatch, capsys) -> None:
    trace = scenario("vadd")
    monkeypatch.chdir(tmp_path)
    for expected in ("add_kernel-repro", "add_kernel-repro-2"):
        code, out, err = run_cli(["repro", str(trace), "--kernel", "add_kernel"], capsys)
        assert code == 0, err
        assert f"writing into ./{expected} (--out DIR to choose)" in err
        assert (tmp_path / expected / "repro.py").is_file()
    code, out, err = run_cli(["repro", str(trace), "--kernel", "add_kernel", "--mode", "compile"], capsys)
    assert code == 0 and (tmp_path / "add_kernel-compile" / "compile_repro.py").is_file(), err


def _finished(tmp_path: Path) -> tuple[Path, Path, str]:
    repo, home = tmp_path / "r", tmp_path / "home"
    shas = linear(repo, 10, culprit=5)
    proc = tb("run", "--repo", str(repo), "--good", shas[0], "--bad", "main", "--build", BUILD, "--test", TEST,
              "--json", cwd=repo, home=home)
    assert proc.returncode == 0, proc.stderr
    return repo, home, json.loads(proc.stdout)["session"]


def test_an_empty_journal_is_no_bisect_result(tmp_path: Path) -> None:
    repo, home, sid = _finished(tmp_path)
    (home / "sessions" / sid / "journal.jsonl").write_text("")
    md = tb("report", sid, cwd=repo, home=home).stdout
    assert "Bisected" not in md
    assert md.startswith("## Bisect result: found in session.json, but the journal holds no step")
    status = tb("status", sid, cwd=repo, home=home).stdout
    assert "the journal holds no step" in status


def test_a_broken_session_neither_blocks_the_bare_commands_nor_its_own_clean(tmp_path: Path) -> None:
    repo, home, sid = _finished(tmp_path)
    broken = home / "sessions" / "29991231-235959-dead"  # the latest by its name
    broken.mkdir()
    (broken / "session.json").write_text("{broken")
    for command in (["status"], ["report"], ["resume", "--json"]):
        proc = tb(*command, cwd=repo, home=home)
        assert proc.returncode == 0, (command, proc.stderr)
        assert f"passed over session {broken.name}, which cannot be read" in proc.stderr
        assert f"tritonbisect clean {broken.name}" in proc.stderr
    assert sid in tb("status", cwd=repo, home=home).stdout
    proc = tb("clean", broken.name, cwd=repo, home=home)
    assert proc.returncode == 0, proc.stderr
    assert f"cleaned unreadable session {broken.name}" in proc.stdout and not broken.exists()
    assert (home / "sessions" / sid).is_dir()  # the readable one stays
    proc = tb("clean", "nosuchsession", cwd=repo, home=home)
    assert proc.returncode == 2 and "no session 'nosuchsession'" in proc.stderr


def test_reversed_endpoints_name_each_commit_once(tmp_path: Path) -> None:
    repo, home = tmp_path / "r", tmp_path / "home"
    shas = linear(repo, 6, culprit=3)
    proc = tb("run", "--repo", str(repo), "--good", shas[-1], "--bad", shas[0], "--test", "true", cwd=repo, home=home)
    assert proc.returncode == 2
    assert proc.stderr.count(shas[-1][:12]) == 1 and proc.stderr.count(shas[0][:12]) == 1, proc.stderr
    assert "swap them" in proc.stderr
    proc = tb("run", "--repo", str(repo), "--good", "main", "--bad", shas[0], "--test", "true", cwd=repo, home=home)
    assert proc.returncode == 2 and proc.stderr.count(shas[-1][:12]) == 1, proc.stderr


def test_the_demo_ends_with_the_next_command_to_try(tmp_path: Path) -> None:
    proc = tb("demo", cwd=tmp_path, home=tmp_path / "home", timeout=120)
    assert proc.returncode == 0, proc.stderr
    tail = proc.stderr.strip().splitlines()[-2:]
    assert tail[0].startswith("next, on your own repository: tritonbisect run --repo PATH"), tail
    assert "tritonbisect trace --out trace/ -- python my_app.py" in tail[1]
