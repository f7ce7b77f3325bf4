"""Places the tool cannot write: one line naming the path and the problem, a documented exit
code, nothing written elsewhere. Tests run as root, so a real read-only (or full) tmpfs is
mounted in a private mount namespace (`unshare -m`) instead of a chmod."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from engine_repo import BUILD, TEST, env_for, linear, snapshot, tb

TRACE = Path(__file__).parent / "data" / "compile_traces" / "inductor_templates"


def _can_mount() -> str | None:
    if shutil.which("unshare") is None:
        return "no unshare here"
    probe = subprocess.run(["unshare", "-m", "sh", "-c", "mount -t tmpfs -o ro tmpfs /mnt"],
                           capture_output=True, text=True, check=False)
    return None if probe.returncode == 0 else f"this sandbox forbids mounting: {probe.stderr.strip()}"


_NO_MOUNT = _can_mount()
needs_mount = pytest.mark.skipif(_NO_MOUNT is not None, reason=_NO_MOUNT or "")


def tb_in_mount(mount: Path, options: str, *args: str, cwd: Path, home: Path, fill: bool = False,
                ) -> subprocess.CompletedProcess[str]:
    """`tritonbisect ARGS` with a tmpfs mounted (OPTIONS) at `mount`, seen by this process only."""
    mount.mkdir(parents=True, exist_ok=True)
    prep = f"mount -t tmpfs -o {options} tmpfs {shlex.quote(str(mount))}"
    if fill:  # a full disk: fill what the size allows
        prep += f"; dd if=/dev/zero of={shlex.quote(str(mount / 'fill'))} bs=4k count=64 2>/dev/null"
    cmd = shlex.join([sys.executable, "-m", "tritonbisect.cli", *args])
    return subprocess.run(["unshare", "-m", "sh", "-c", f"{prep}; exec {cmd}"], cwd=cwd,
                          env=env_for(home), capture_output=True, text=True, timeout=120, check=False)


def one_line(proc: subprocess.CompletedProcess[str], path: str, problem: str, code: int = 2) -> None:
    assert proc.returncode == code, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith("tritonbisect: error:")]
    assert len(lines) == 1, proc.stderr
    assert path in lines[0] and problem in lines[0], lines[0]


@needs_mount
def test_run_with_a_read_only_workdir(tmp_path: Path) -> None:
    repo, home, ro = tmp_path / "repo", tmp_path / "home", tmp_path / "ro"
    shas = linear(repo, 10, culprit=6)
    before = snapshot(repo)
    proc = tb_in_mount(ro, "ro", "run", "--repo", str(repo), "--good", shas[0], "--bad", "main",
                       "--build", BUILD, "--test", TEST, "--workdir", str(ro / "w"), cwd=tmp_path, home=home)
    one_line(proc, str(ro / "w"), "read-only file system")
    assert snapshot(repo) == before and not home.exists()  # nothing written elsewhere
    assert "worktree" not in subprocess.run(["git", "worktree", "list"], cwd=repo, capture_output=True,
                                            text=True, check=True).stdout.split("\n", 1)[-1]


@pytest.mark.parametrize("workdir", ["/sys/kernel", "/proc/foo"])
def test_run_with_a_workdir_that_cannot_be_made(tmp_path: Path, workdir: str) -> None:
    repo, home = tmp_path / "repo", tmp_path / "home"
    shas = linear(repo, 6, culprit=3)
    proc = tb("run", "--repo", str(repo), "--good", shas[0], "--bad", "main", "--build", BUILD,
              "--test", TEST, "--workdir", workdir, cwd=tmp_path, home=home)
    one_line(proc, workdir, "")
    assert not home.exists()


@needs_mount
def test_report_to_a_read_only_place_and_to_a_full_disk(tmp_path: Path) -> None:
    repo, home = tmp_path / "repo", tmp_path / "home"
    shas = linear(repo, 6, culprit=3)
    assert tb("run", "--repo", str(repo), "--good", shas[0], "--bad", "main", "--build", BUILD,
              "--test", TEST, cwd=tmp_path, home=home).returncode == 0
    ro = tmp_path / "ro"
    proc = tb_in_mount(ro, "ro", "report", "-o", str(ro / "r.md"), cwd=tmp_path, home=home)
    one_line(proc, str(ro / "r.md"), "read-only file system")
    full = tmp_path / "full"
    proc = tb_in_mount(full, "size=16k", "report", "-o", str(full / "r.md"), cwd=tmp_path, home=home,
                       fill=True)
    one_line(proc, str(full / "r.md"), "no space left on device", code=4)


@needs_mount
@pytest.mark.parametrize("mode", ["runtime", "compile"])
def test_repro_into_a_read_only_place(tmp_path: Path, mode: str) -> None:
    ro = tmp_path / "ro"
    proc = tb_in_mount(ro, "ro", "repro", str(TRACE), "--kernel", "triton_mm", "--mode", mode,
                       "--out", str(ro / "o"), cwd=tmp_path, home=tmp_path / "home")
    one_line(proc, str(ro / "o"), "read-only file system")


@pytest.mark.parametrize("mode", ["runtime", "compile"])
def test_repro_onto_an_existing_file(tmp_path: Path, mode: str) -> None:
    afile = tmp_path / "afile"
    afile.write_text("mine\n")
    for out in (afile, afile / "sub"):
        proc = tb("repro", str(TRACE), "--kernel", "triton_mm", "--mode", mode, "--out", str(out),
                  cwd=tmp_path, home=tmp_path / "home")
        one_line(proc, str(out), "file")
    assert afile.read_text() == "mine\n"


@needs_mount
def test_trace_into_a_read_only_place_runs_nothing(tmp_path: Path) -> None:
    ro, flag = tmp_path / "ro", tmp_path / "ran"
    proc = tb_in_mount(ro, "ro", "trace", "--out", str(ro / "t"), "--", sys.executable, "-c",
                       f"open({str(flag)!r}, 'w')", cwd=tmp_path, home=tmp_path / "home")
    one_line(proc, str(ro / "t"), "read-only file system")
    assert not flag.exists()


def test_an_unrelated_os_error_is_not_hidden(tmp_path: Path) -> None:
    from tritonbisect.core.oserrors import place_error

    assert place_error(OSError(5, "Input/output error")) is None  # no path: a real failure
    err = place_error(OSError(30, "Read-only file system", "/x"))
    assert err is not None and err.exit_code == 2 and err.message.startswith("/x: read-only")
    full = place_error(OSError(28, "No space left on device", "/y"))
    assert full is not None and full.exit_code == 4 and "no space left" in full.message


@needs_mount
def test_step_with_a_read_only_workdir_aborts_in_one_line(tmp_path: Path) -> None:
    repo, ro = tmp_path / "repo", tmp_path / "ro"
    linear(repo, 3, culprit=2)
    proc = tb_in_mount(ro, "ro", "step", "--test", TEST, "--build", BUILD, "--workdir", str(ro / "w"),
                       cwd=repo, home=tmp_path / "home")
    assert proc.returncode == 128, proc.stderr  # git bisect's abort
    assert proc.stderr.strip().count("\n") == 0 and "read-only file system" in proc.stderr
