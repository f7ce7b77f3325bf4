# ruff: noqa: SIM105 (try/except/pass: contextlib's import would cost every command's start)
"""The keeper: runs one command for `core.process.run_logged` and makes sure that nothing it
started outlives it.

Run as its own script (`python -I -S keeper.py [options] -- argv...`, standard library only:
it starts in tens of milliseconds and imports nothing of ours). It

* becomes a child subreaper, so a process the command left behind (a daemon that called
  `setsid`, a double fork) is reparented to it rather than to init, and is found and killed
  when the command ends;
* asks the kernel for a signal when the tool dies (`PR_SET_PDEATHSIG`): a `kill -9` of the
  tool still ends the command, its leftovers, and a sandbox's private folders (`--remove`);
* puts the command in a cgroup of its own where it may create one (cgroup v1, or a v2
  hierarchy that delegates to it), with the pids and memory limits given; elsewhere the
  limits are per-process rlimits (`--limit`);
* on SIGTERM (the command's timeout) passes it on and gives the command `--grace` seconds
  before killing everything; on SIGUSR1 (a cancelled step) or the tool's death, kills at once.

It exits with the command's own status (dying of the same signal when the command did), or as
a shell would (127, 126) when the command cannot be started. With `--status-fd N` it first
writes that status to the descriptor N (which the command does not inherit): a keeper that ends
without writing it was itself killed, and the command's status is not known.
"""

from __future__ import annotations

# `_signal`, not `signal` (which imports enum); contextlib, shutil and re are not imported:
# each costs a noticeable part of a start that every logged command pays
import _signal as signal  # type: ignore[import-not-found]  # (C module: no stub)
import os
import resource
import sys
import time

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
_CGROOT = "/sys/fs/cgroup"
_RLIMITS = {"file_size": resource.RLIMIT_FSIZE, "processes": resource.RLIMIT_NPROC,
            "memory": resource.RLIMIT_DATA, "core": resource.RLIMIT_CORE}
_WATCHED = {signal.SIGCHLD, signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGUSR1}


def _prctl(option: int, value: int) -> bool:
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


# --- processes --------------------------------------------------------------------------------
def _parents() -> dict[int, int]:
    """pid -> parent pid of every process we can see."""
    found: dict[int, int] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                found[int(name)] = int(f.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
    return found


def _descendants(root: int) -> list[int]:
    parents = _parents()
    children: dict[int, list[int]] = {}
    for pid, ppid in parents.items():
        children.setdefault(ppid, []).append(pid)
    out: list[int] = []
    todo = list(children.get(root, []))
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, []))
    return out


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _has_children() -> bool:
    try:
        os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return False
    return True


def _reap() -> list[tuple[int, int]]:
    """Every finished child's (pid, status), without waiting."""
    done: list[tuple[int, int]] = []
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return done
        if pid == 0:
            return done
        done.append((pid, status))


def _kill_all(me: int, cgroups: list[str], deadline_s: float = 10.0) -> None:
    """SIGKILL every descendant (and every process left in our cgroups) until none is left."""
    end = time.monotonic() + deadline_s
    while True:
        # a subreaper with no child at all has no descendant either (an orphan comes to us)
        victims = set(_descendants(me)) if _has_children() else set()
        for group in cgroups:
            victims.update(pid for pid in _cgroup_pids(group) if pid != me)
        for pid in victims:
            _signal(pid, signal.SIGKILL)
        _reap()
        if not victims or time.monotonic() > end:
            return
        time.sleep(0.01)


# --- cgroups ----------------------------------------------------------------------------------
def _own_cgroups() -> dict[str, str]:
    """controller (or "" for cgroup v2) -> our cgroup's path in its hierarchy."""
    found: dict[str, str] = {}
    try:
        with open("/proc/self/cgroup") as f:
            lines = f.read().splitlines()
    except OSError:
        return found
    for line in lines:
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(",") if controllers else [""]:
            found[controller] = path
    return found


def _write(path: str, text: str) -> bool:
    try:
        with open(path, "w") as f:
            f.write(text)
        return True
    except OSError:
        return False


def _mkdir(path: str) -> bool:
    try:
        os.mkdir(path)
        return True
    except OSError:
        return False


def _rmdir(path: str) -> None:
    try:
        os.rmdir(path)
    except OSError:
        pass


def _cgroup_pids(group: str) -> list[int]:
    try:
        with open(os.path.join(group, "cgroup.procs")) as f:
            return [int(line) for line in f.read().split()]
    except (OSError, ValueError):
        return []


def _make_cgroups(limits: dict[str, int], name: str) -> tuple[list[str], list[str]]:
    """Create our own cgroups (one per controller with v1, one with v2) holding the limits
    that cgroups enforce, and move this process in; (the cgroups, the limits they took)."""
    own = _own_cgroups()
    made: list[str] = []
    took: set[str] = set()
    v2_keys = {"processes": "pids.max", "memory": "memory.max"}
    v1_keys = {"processes": ("pids", "pids.max"), "memory": ("memory", "memory.limit_in_bytes")}
    if "" in own and os.path.exists(os.path.join(_CGROOT, "cgroup.controllers")):
        parent = os.path.join(_CGROOT, own[""].lstrip("/"))
        group = os.path.join(parent, name)
        if _mkdir(group):
            ok = all(_write(os.path.join(group, v2_keys[k]), str(v)) for k, v in limits.items() if k in v2_keys)
            if ok and _write(os.path.join(group, "cgroup.procs"), str(os.getpid())):
                made.append(group)
                took.update(k for k in limits if k in v2_keys)
            else:
                _rmdir(group)
    for key, (controller, limit_file) in v1_keys.items():
        if key not in limits or key in took or controller not in own:
            continue
        group = os.path.join(_CGROOT, controller, own[controller].lstrip("/"), name)
        if _mkdir(group):
            if _write(os.path.join(group, limit_file), str(limits[key])) and \
                    _write(os.path.join(group, "cgroup.procs"), str(os.getpid())):
                made.append(group)
                took.add(key)
            else:
                _rmdir(group)
    return made, sorted(took)


def _remove_cgroups(groups: list[str]) -> None:
    for group in groups:
        parent = os.path.dirname(group)
        _write(os.path.join(parent, "cgroup.procs"), str(os.getpid()))
        for _ in range(50):
            try:
                os.rmdir(group)
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.02)


# --- the command ------------------------------------------------------------------------------
def _start(argv: list[str], rlimits: dict[str, int]) -> int:
    pid = os.fork()
    if pid:
        return pid
    try:
        signal.pthread_sigmask(signal.SIG_SETMASK, set())
        for sig in _WATCHED | {signal.SIGPIPE}:
            signal.signal(sig, signal.SIG_DFL)
        for name, value in rlimits.items():
            try:
                resource.setrlimit(_RLIMITS[name], (value, value))
            except (ValueError, OSError):
                pass
        os.execvp(argv[0], argv)
    except FileNotFoundError:
        os.write(2, f"{argv[0]}: command not found\n".encode())
        os._exit(127)
    except PermissionError:
        os.write(2, f"{argv[0]}: permission denied: command not found\n".encode())
        os._exit(126)
    except BaseException:  # noqa: BLE001 - a child must never return into the keeper
        os._exit(126)
    os._exit(126)


def _exit_like(status: int) -> None:
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        except (ValueError, OSError):
            pass
        signal.pthread_sigmask(signal.SIG_SETMASK, set())
        try:
            signal.signal(sig, signal.SIG_DFL)
        except OSError:
            pass  # SIGKILL and SIGSTOP take no handler: theirs is the default already
        os.kill(os.getpid(), sig)
        time.sleep(1)
        sys.exit(128 + sig)
    sys.exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)


def _parse(args: list[str]) -> tuple[dict, list[str]]:
    opts: dict = {"parent": None, "grace": 3.0, "remove": [], "limits": {}, "cgroup": False, "status_fd": None}
    i = 0
    while i < len(args) and args[i] != "--":
        word = args[i]
        if word == "--cgroup":
            opts["cgroup"] = True
            i += 1
            continue
        value = args[i + 1]
        if word == "--parent":
            opts["parent"] = int(value)
        elif word == "--grace":
            opts["grace"] = float(value)
        elif word == "--status-fd":
            opts["status_fd"] = int(value)
        elif word == "--remove":
            opts["remove"].append(value)
        elif word == "--limit":
            key, _, amount = value.partition("=")
            opts["limits"][key] = int(amount)
        else:
            raise SystemExit(f"keeper: unknown option {word}")
        i += 2
    return opts, args[i + 1:]


def main(args: list[str]) -> None:
    opts, argv = _parse(args)
    if not argv:
        raise SystemExit("keeper: no command")
    if opts["status_fd"] is not None:
        os.set_inheritable(opts["status_fd"], False)  # the command must not write our report
    me = os.getpid()
    signal.pthread_sigmask(signal.SIG_BLOCK, _WATCHED)
    # a signal when the tool dies; when it is already gone, nobody waits for this command
    _prctl(_PR_SET_PDEATHSIG, signal.SIGUSR1)
    if opts["parent"] is not None and os.getppid() != opts["parent"]:
        sys.exit(128 + signal.SIGKILL)
    _prctl(_PR_SET_CHILD_SUBREAPER, 1)
    limits = dict(opts["limits"])
    cgroups: list[str] = []
    if opts["cgroup"]:
        cgroups, took = _make_cgroups({k: v for k, v in limits.items() if k in ("processes", "memory")},
                                      f"tritonbisect-{me}")
        for key in took:  # enforced for the whole command: no per-process limit besides
            limits.pop(key, None)
    child = _start(argv, limits)
    status: int | None = None
    deadline: float | None = None
    try:
        while status is None:
            timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
            if timeout == 0.0:
                break
            info = signal.sigtimedwait(_WATCHED, timeout if timeout is not None else 3600.0)
            for pid, st in _reap():
                if pid == child:
                    status = st
            if info is None or info.si_signo == signal.SIGCHLD:
                continue
            if info.si_signo in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP) and deadline is None:
                _signal(child, signal.SIGTERM)
                deadline = time.monotonic() + opts["grace"]
            elif info.si_signo == signal.SIGUSR1:
                break
    finally:
        _kill_all(me, cgroups)
        if status is None:
            for pid, st in _reap():
                if pid == child:
                    status = st
        _remove_cgroups(cgroups)
        if opts["remove"]:
            import shutil

            for folder in opts["remove"]:
                shutil.rmtree(folder, ignore_errors=True)
    final = status if status is not None else signal.SIGKILL
    if opts["status_fd"] is not None:
        try:
            os.write(opts["status_fd"], f"{final}\n".encode())
        except OSError:
            pass
    _exit_like(final)


if __name__ == "__main__":
    main(sys.argv[1:])
