"""core/lock.py: the one file lock, held against real second processes (flock is per open file,
so a child process holding the lock is what a second tritonbisect is)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

from tritonbisect.core.lock import FileLock, PidLock, locked

_HOLD = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from tritonbisect.core.lock import FileLock
    lock = FileLock(Path(sys.argv[1]))
    assert lock.acquire(shared=sys.argv[2] == "shared")
    print("held", flush=True)
    time.sleep(60)
""")


def _holder(path: Path, mode: str = "exclusive") -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", _HOLD, str(path), mode], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def test_a_lock_another_process_holds_is_not_taken_without_waiting(tmp_path: Path) -> None:
    path = tmp_path / "slot.lock"
    proc = _holder(path)
    try:
        lock = FileLock(path)
        assert not lock.acquire(wait=False) and not lock.held
        # a shared lock is refused too while it is held exclusively
        assert not lock.acquire(shared=True, wait=False)
    finally:
        proc.kill()
        proc.wait()
    assert lock.acquire(wait=False) and lock.held  # the holder is gone: the kernel let it go
    lock.release()
    assert not lock.held


def test_shared_locks_share_and_keep_an_exclusive_one_out(tmp_path: Path) -> None:
    path = tmp_path / "cache.lock"
    proc = _holder(path, "shared")
    try:
        shared = FileLock(path)
        assert shared.acquire(shared=True, wait=False)
        assert not FileLock(path).acquire(wait=False)
        shared.release()
    finally:
        proc.kill()
        proc.wait()


def test_the_blocking_form_waits_for_the_holder(tmp_path: Path) -> None:
    path = tmp_path / "store" / ".lock"
    path.parent.mkdir()
    proc = _holder(path)
    started = time.monotonic()
    subprocess.Popen([sys.executable, "-c", "import time, os, signal, sys; time.sleep(1); os.kill(int(sys.argv[1]), signal.SIGKILL)",
                      str(proc.pid)])
    with locked(path):
        waited = time.monotonic() - started
    proc.wait()
    assert waited >= 0.9  # it waited for the holder to die


def test_locked_makes_its_folder_and_two_objects_in_one_process_exclude_each_other(tmp_path: Path) -> None:
    path = tmp_path / "new" / "x.lock"
    with locked(path, mkdir=True):
        assert path.exists()
        assert not FileLock(path).acquire(wait=False)
    assert FileLock(path).acquire(wait=False)


def test_a_missing_file_without_create_is_a_lock_nobody_holds(tmp_path: Path) -> None:
    lock = FileLock(tmp_path / "gone.lock", create=False)
    assert not lock.acquire(wait=False)
    assert not (tmp_path / "gone.lock").exists()


def test_a_pid_lock_names_its_holder_and_is_seen_from_outside(tmp_path: Path) -> None:
    path = tmp_path / "session" / "lock"
    script = textwrap.dedent("""
        import sys, time
        from pathlib import Path
        from tritonbisect.core.lock import PidLock
        assert PidLock(Path(sys.argv[1])).acquire() is None
        print("held", flush=True)
        time.sleep(60)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script, str(path)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
        mine = PidLock(path)
        assert mine.acquire() == f" (pid {proc.pid})"
        assert mine.is_locked_elsewhere()
    finally:
        proc.kill()
        proc.wait()
    assert not mine.is_locked_elsewhere()
    assert mine.acquire() is None and mine.held and not mine.is_locked_elsewhere()
    mine.release()
    assert path.read_text() == ""  # the pid is wiped on release
    assert not PidLock(tmp_path / "never").is_locked_elsewhere()
