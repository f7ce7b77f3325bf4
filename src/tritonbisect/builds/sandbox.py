"""The sandbox for untrusted builds and tests: the command line and environment of one process.

A sandboxed process sees the whole filesystem read-only, except the folders it is given to
write (its worktree, build folders, the cache's staging area, the caches a build needs);
the user's $HOME and /tmp are replaced by empty private folders (paths the process needs
under them are bound back in, read-only unless writable); it has no network unless asked
(then it shares the host's), its own PID namespace (all of it dies with its leader), and an
environment built from an allow-list, never a copy of ours.

Two ways to get one, tried in this order: bubblewrap (`bwrap`, unprivileged where user
namespaces are allowed) and util-linux `unshare` (needs root: mounts in a new mount
namespace). `TRITONBISECT_SANDBOX=bwrap|unshare|none` forces a choice (`none`: act as if
neither worked). `detect()` says which one works here; `wrap()` builds the process's
command line and environment; nothing here runs the process.
"""

from __future__ import annotations

import functools
import os
import re
import shlex
import shutil
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tritonbisect.builds.confine import host_sockets, limits_from_env
from tritonbisect.core.errors import InputError
from tritonbisect.core.gitrun import Pinned, all_pinned

BWRAP = "bwrap"
UNSHARE = "unshare"
CHOICE_ENV = "TRITONBISECT_SANDBOX"
# util-linux setpriv: no capability left in any set, none to be gained by exec, no_new_privs
_DROP_ALL = "setpriv --no-new-privs --inh-caps=-all --ambient-caps=-all --bounding-set=-all"
# a user namespace of the sandbox's own, in which no further one can be made
_BWRAP_USERNS = ("--unshare-user", "--disable-userns")
_UNSHARE_USERNS = ("--user", "--map-root-user")
_NO_MORE_USERNS = "echo 0 > /proc/sys/user/max_user_namespaces"

# Variables a build or test legitimately reads. Anything else (tokens, cloud credentials,
# ssh agents, proxies with passwords, our API key) stays outside.
_ALLOWED = re.compile(
    r"^(PATH|LANG|LANGUAGE|LC_\w+|TZ|USER|LOGNAME|SHELL|TERM|SOURCE_DATE_EPOCH|"
    r"CC|CXX|CPP|LD|AR|NM|RANLIB|STRIP|OBJCOPY|CFLAGS|CXXFLAGS|CPPFLAGS|LDFLAGS|"
    r"MAKEFLAGS|MAX_JOBS|DEBUG|REL_WITH_DEB_INFO|CMAKE_\w+|NINJA_\w+|CCACHE_\w+|"
    r"LLVM_\w+|MLIR_\w+|TRITON_\w+|TRITONBISECT_\w+|TORCHINDUCTOR_\w+|PYTORCH_\w+|USE_\w+|"
    r"PYTHONPATH|PYTHONNOUSERSITE|PYTHONHASHSEED|PYTHONDONTWRITEBYTECODE|PYTHONUNBUFFERED|"
    r"PYTHONFAULTHANDLER|VIRTUAL_ENV|PIP_DISABLE_PIP_VERSION_CHECK|PIP_NO_CACHE_DIR|"
    r"CUDA_\w+|NVIDIA_\w+|NVCC_\w+|HIP_\w+|ROCM_\w+|LD_LIBRARY_PATH|LIBRARY_PATH|CPATH|"
    r"C_INCLUDE_PATH|CPLUS_INCLUDE_PATH|PKG_CONFIG_PATH|OMP_NUM_THREADS)$"
)
# ...unless the name says it holds a secret (TRITON_UPLOAD_TOKEN would match TRITON_\w+)
_SECRET = re.compile(r"TOKEN|SECRET|PASSW|CREDENTIAL|API_?KEY|AUTH|COOKIE|SESSION", re.IGNORECASE)

# Folders replaced by empty private ones: where the user's secrets and other processes'
# temporary files live. /run too: a Unix socket there (the Docker daemon's) can be connected
# to on a read-only mount.
_PRIVATE_TMP = ("/tmp", "/var/tmp", "/run")


class SandboxUnavailable(InputError):
    """No sandbox works on this machine (the message says why and what to do)."""


@dataclass(frozen=True)
class Sandbox:
    kind: str  # BWRAP | UNSHARE
    executable: str
    version: str = ""
    # the sandbox runs in a user namespace of its own in which no further one can be made
    # (nested user namespaces give back capabilities there, and the kernel code behind them)
    own_userns: bool = False

    def describe(self) -> str:
        name = "bubblewrap" if self.kind == BWRAP else "unshare (Linux namespaces)"
        return (f"{name}{' ' + self.version if self.version else ''}: no network, read-only filesystem "
                "except the build's own folders, private $HOME and /tmp, allow-listed environment, "
                f"no capabilities; at most {limits_from_env().describe()}")


@dataclass(frozen=True)
class Layout:
    """What one sandboxed process may see and do, besides reading the filesystem.

    `writable`: folders bound read-write at their own path (created when missing).
    `readable`: folders to bind back read-only when they lie under a private folder ($HOME,
    /tmp); paths in the environment, the command and the writable trees' git folders are
    added on their own. `network`: share the host's network (default: none at all).
    `keep_env`: names passed through although the allow-list would drop them (the user's
    own --env, an agent's API key). `home`/`tmp`: the host folders that become $HOME and /tmp.
    `files`: (host file, path inside) pairs bound read-only over what is there (/etc/hosts).
    """

    home: Path
    tmp: Path
    writable: tuple[Path, ...] = ()
    readable: tuple[Path, ...] = ()
    network: bool = False
    keep_env: tuple[str, ...] = field(default_factory=tuple)
    files: tuple[tuple[Path, Path], ...] = ()


# --- finding one ----------------------------------------------------------------------------
def detect(choice: str | None = None) -> Sandbox | None:
    """The sandbox that works here (bubblewrap first), or None. `choice` (default: the
    TRITONBISECT_SANDBOX variable, else "auto") forces one: bwrap, unshare, none."""
    choice = (choice or os.environ.get(CHOICE_ENV) or "auto").strip().lower()
    if choice not in ("auto", BWRAP, UNSHARE, "none"):
        raise SandboxUnavailable(f"{CHOICE_ENV}={choice!r}: expected auto, bwrap, unshare or none")
    return _detect(choice)


@functools.lru_cache(maxsize=8)
def _detect(choice: str) -> Sandbox | None:
    if choice in ("auto", BWRAP):
        found = _try_bwrap()
        if found is not None or choice == BWRAP:
            return found
    if choice in ("auto", UNSHARE):
        return _try_unshare()
    return None


def require() -> Sandbox:
    """The sandbox that works here; SandboxUnavailable (one line: why, what to do) if none."""
    found = detect()
    if found is None:
        raise SandboxUnavailable(
            f"no sandbox works on this machine ({why_unavailable()}): install bubblewrap "
            "(apt-get install bubblewrap) where user namespaces are allowed, or run as root for unshare")
    return found


def announce() -> str:
    """The one line printed when sandboxed work starts."""
    return f"sandbox: {require().describe()}"


def why_unavailable() -> str:
    """One line on what was tried (for the refusal message)."""
    choice = os.environ.get(CHOICE_ENV, "auto")
    if choice == "none":
        return f"{CHOICE_ENV}=none"
    tried = []
    tried.append("bwrap: not installed" if shutil.which(BWRAP) is None else "bwrap: cannot create namespaces here")
    if shutil.which(UNSHARE) is None:
        tried.append("unshare: not installed")
    elif os.geteuid() != 0:
        tried.append("unshare: needs root")
    elif shutil.which("setpriv") is None:
        tried.append("unshare: needs setpriv (util-linux) to drop capabilities")
    else:
        tried.append("unshare: cannot create namespaces here")
    return "; ".join(tried)


def _works(cmd: list[str]) -> bool:
    try:
        return subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def _try_bwrap() -> Sandbox | None:
    exe = shutil.which(BWRAP)
    if exe is None:
        return None
    probe = [exe, "--ro-bind", "/", "/", "--dev-bind", "/dev", "/dev", "--proc", "/proc",
             "--tmpfs", "/tmp", "--unshare-all", "--die-with-parent", "--cap-drop", "ALL"]
    own_userns = _works([*probe, *_BWRAP_USERNS, "--", "true"])
    if not own_userns and not _works([*probe, "--", "true"]):
        return None
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        out = ""
    return Sandbox(BWRAP, exe, out.split()[-1] if out.split() else "", own_userns)


def _try_unshare() -> Sandbox | None:
    exe = shutil.which(UNSHARE)
    if exe is None or os.geteuid() != 0 or shutil.which("setpriv") is None:
        return None
    probe = [exe, "--mount", "--net", "--pid", "--fork", "--kill-child", "--mount-proc", "--",
             "/bin/bash", "-c", f"mount --make-rprivate / && mount -t tmpfs tmpfs /tmp && {_DROP_ALL} -- true"]
    with_userns = [*probe[:1], *_UNSHARE_USERNS, *probe[1:-1],
                   f"{_NO_MORE_USERNS} && {probe[-1]} && ! {_DROP_ALL} -- unshare -U true 2>/dev/null"]
    if _works(with_userns):
        return Sandbox(UNSHARE, exe, own_userns=True)
    return Sandbox(UNSHARE, exe) if _works(probe) else None


# --- the environment ------------------------------------------------------------------------
def allowed_env(env: Mapping[str, str], keep: Iterable[str] = ()) -> dict[str, str]:
    """The variables of `env` a sandboxed process gets: allow-listed names without a
    secret-sounding name, plus the `keep` names."""
    keep = set(keep)
    return {k: v for k, v in env.items()
            if k in keep or (_ALLOWED.match(k) and not _SECRET.search(k))}


# --- the command line -----------------------------------------------------------------------
def wrap(sandbox: Sandbox, argv: Sequence[str], env: Mapping[str, str], *, cwd: Path,
         layout: Layout, user_home: Path | None = None) -> tuple[list[str], dict[str, str]]:
    """The command line and environment that run `argv` (in `cwd`) inside the sandbox.

    `user_home` is the folder hidden as $HOME (default: the HOME of `env`, else ours); inside,
    $HOME is that same path, now showing `layout.home`."""
    home = Path(user_home or env.get("HOME") or Path.home()).absolute()
    senv = allowed_env(env, layout.keep_env)
    senv["HOME"] = str(home)
    senv["TMPDIR"] = "/tmp"
    # a $HOME of / (some CI containers) cannot be hidden: /tmp stays private, $HOME is shown
    hide_home = len(home.parts) > 1
    hidden = [*([home] if hide_home else []), *(Path(p) for p in _PRIVATE_TMP)]
    writable = _unique(Path(p).absolute() for p in layout.writable)
    pins = git_checkouts(writable)
    # (HOME and TMPDIR name the private folders: the user's $HOME may not even exist)
    named = {k: v for k, v in senv.items() if k not in ("HOME", "TMPDIR")}
    wanted = [*layout.readable, Path(cwd), *_paths_in(argv, named),
              *(d for p in pins for d in (p.git_dir, p.common_dir))]
    readable = [p for p in _unique(Path(p).absolute() for p in wanted)
                if p.exists() and p not in hidden and _under_any(p, hidden) and not _under_any(p, writable)]
    private = [*([(Path(layout.home), home)] if hide_home else []), (Path(layout.tmp), Path("/tmp"))]
    mounts = _mount_order(private, readable, writable, _git_guard(writable, pins))
    mounts += [(Path(src), Path(dst), False) for src, dst in layout.files]
    # a daemon's socket elsewhere (Ray's, when its temp folder is on another disk): covered
    mounts += [(Path(os.devnull), sock, False) for sock in host_sockets(hidden, readable, writable)]
    if sandbox.kind == BWRAP:
        cmd = _bwrap(sandbox, mounts, layout.network, Path(cwd))
    else:
        cmd = _unshare(sandbox, mounts, layout.network, Path(cwd))
    return [*cmd, *argv], senv


Mount = tuple[Path, Path, bool]  # source on the host, path inside, read-write


def _bwrap(sandbox: Sandbox, mounts: list[Mount], network: bool, cwd: Path) -> list[str]:
    # every capability dropped (also as root, where bubblewrap keeps them otherwise);
    # bubblewrap always sets no_new_privs
    cmd = [sandbox.executable, "--ro-bind", "/", "/", "--dev-bind", "/dev", "/dev", "--tmpfs", "/dev/shm",
           "--proc", "/proc", "--unshare-all", "--die-with-parent", "--cap-drop", "ALL",
           *(_BWRAP_USERNS if sandbox.own_userns else ())]
    if network:
        cmd.append("--share-net")
    cmd += ["--tmpfs", "/var/tmp", "--tmpfs", "/run"]
    for src, dst, rw in mounts:
        cmd += ["--bind" if rw else "--ro-bind", str(src), str(dst)]
    return [*cmd, "--chdir", str(cwd), "--"]


def _unshare(sandbox: Sandbox, mounts: list[Mount], network: bool, cwd: Path) -> list[str]:
    """unshare's namespaces, then a bash script that makes every mount read-only and binds
    the private and writable folders. Sources are opened before anything is hidden and bound
    through /proc/self/fd (a path under /tmp would otherwise name the new, empty /tmp)."""
    fds = {str(src): 10 + i for i, src in enumerate(dict.fromkeys(src for src, _, _ in mounts))}
    q = shlex.quote
    lines = ["set -e", *([_NO_MORE_USERNS] if sandbox.own_userns else [])]
    lines += [f"exec {fd}<{q(src)}" for src, fd in fds.items()]
    lines += [
        "mount --make-rprivate /",
        # every mount read-only (a mount that refuses, e.g. /proc's own, stays as it is)
        "while read -r _ mp _; do mount -o remount,bind,ro \"$(printf '%b' \"$mp\")\" 2>/dev/null || true;"
        " done < /proc/self/mounts",
        "mount -t tmpfs tmpfs /dev/shm",
        # a new network namespace starts with its loopback down (bubblewrap brings it up)
        *([] if network else ["ip link set lo up 2>/dev/null || true"]),
        "mount -t tmpfs tmpfs /var/tmp",
        "mount -t tmpfs tmpfs /run",
    ]

    def bind(src: Path, dst: Path, rw: bool) -> None:
        # `mkdir` only when the mount point is missing, one `mount` for a read-only bind
        # (util-linux remounts it read-only itself; a writable one needs the remount, its
        # source lying on a mount made read-only above): each program started costs, as many
        # times as there are binds
        lines.append(f"[ -e {q(str(dst))} ] || mkdir -p {q(str(dst))} 2>/dev/null || true")
        if rw:
            lines.append(f"mount --no-canonicalize --bind /proc/self/fd/{fds[str(src)]} {q(str(dst))}")
            lines.append(f"mount -o remount,bind,rw {q(str(dst))}")
        else:
            lines.append(f"mount --no-canonicalize --bind -o ro /proc/self/fd/{fds[str(src)]} {q(str(dst))}")

    for src, dst, rw in mounts:
        bind(src, dst, rw)
    lines += [f"exec {fd}<&-" for fd in fds.values()]
    # The mounts made, every capability goes (the bounding set too, so that no program gets
    # one back, root's included) and no_new_privs is set: then a shell that stays PID 1 of
    # the namespace (unshare ignores SIGTERM, and a PID 1 without a handler does too), so on
    # the runner's SIGTERM it kills every process of the namespace itself.
    pid1 = "\n".join([f"cd {q(str(cwd))}", "trap 'kill -KILL -1 2>/dev/null; exit 143' TERM INT HUP",
                      '"$@" &', "wait $!"])
    lines.append(f"exec {_DROP_ALL} -- /bin/bash -c {q(pid1)} tritonbisect-sandbox \"$@\"")
    cmd = [sandbox.executable, *(_UNSHARE_USERNS if sandbox.own_userns else ()),
           "--mount", "--pid", "--fork", "--kill-child", "--mount-proc", "--ipc", "--uts"]
    if not network:
        cmd.append("--net")
    return [*cmd, "--", "/bin/bash", "-c", "\n".join(lines), "tritonbisect-sandbox"]


def _mount_order(private: list[tuple[Path, Path]], readable: list[Path], writable: list[Path],
                 guarded: Sequence[Path] = ()) -> list[Mount]:
    """Outer folders before the folders inside them, so that an inner bind is not covered (a
    readable folder holding $HOME is bound before $HOME is hidden again); at equal depth the
    private folders first. `guarded`: read-only inside writable folders (a checkout's `.git`)."""
    mounts = [(src, dst, True, 0) for src, dst in private]
    mounts += [(p, p, False, 1) for p in readable] + [(p, p, True, 1) for p in writable]
    mounts += [(p, p, False, 2) for p in guarded]
    mounts.sort(key=lambda m: (len(m[1].parts), m[3], str(m[1])))
    return [(src, dst, rw) for src, dst, rw, _ in mounts]


def git_checkouts(writable: Sequence[Path]) -> list[Pinned]:
    """The checkouts whose git folders the tool knows (core.gitrun) that lie in the writable
    folders, or hold one."""
    forms = _unique([*writable, *(Path(os.path.realpath(w)) for w in writable)])
    return [p for p in all_pinned()
            if _under_any(p.tree, forms) or any(_under_any(w, [p.tree]) for w in forms)]


def _git_guard(writable: Sequence[Path], pins: Sequence[Pinned]) -> list[Path]:
    """What is bound read-only over the writable folders so that nothing inside can change the
    git the tool runs next: every `.git` at the top of a writable folder or of a known
    checkout in one, and the known git folders that lie in one (a checkout's own `.git`
    folder). A `.git` that is a link is refused: binding would follow it."""
    forms = _unique([*writable, *(Path(os.path.realpath(w)) for w in writable)])
    found: list[Path] = []
    for dotgit in [*(w / ".git" for w in writable), *(p.tree / ".git" for p in pins if _under_any(p.tree, forms))]:
        if dotgit.is_symlink():
            raise SandboxUnavailable(f"{dotgit} is a link: refusing to run a build there (git would follow it)")
        if dotgit.exists():
            found.append(dotgit)
    for p in pins:
        found += [d for d in (p.git_dir, p.common_dir) if _under_any(d, forms)]
    return _unique(found)


def _paths_in(argv: Sequence[str], env: Mapping[str, str]) -> list[Path]:
    """Absolute paths named by the command and the environment (PATH-like lists split), and
    the installation an executable belongs to (a venv's python is a link to its base)."""
    found: list[Path] = []
    texts = [a for a in argv if a.startswith("/")]
    texts += [part for v in env.values() for part in v.split(os.pathsep) if part.startswith("/")]
    for text in texts:
        if "\n" in text or len(text) > 4096:
            continue
        path = Path(text)
        if path.is_file() and os.access(path, os.X_OK):
            # <prefix>/bin/tool of an installation (a venv, the base python it links to): the
            # whole prefix, for its lib/
            for exe in (path, path.resolve()):
                prefix = exe.parent.parent
                installed = exe.parent.name == "bin" and ((prefix / "lib").is_dir() or (prefix / "pyvenv.cfg").is_file())
                found.append(prefix if installed else exe.parent)
        else:
            found.append(path if path.is_dir() else path.parent)
            if path.is_dir():
                found.extend(_venv_sources(path))
    return found


def _venv_sources(folder: Path) -> list[Path]:
    """What a venv (or its bin/) named on PATH or in VIRTUAL_ENV needs beside itself: the
    installation its pyvenv.cfg names as `home`, and every folder its links pass through (a
    venv made from another venv links to that one's python, which may be hidden too)."""
    root = folder.parent if folder.name == "bin" else folder
    cfg = root / "pyvenv.cfg"
    if not cfg.is_file():
        return []
    found: list[Path] = []
    try:
        lines = cfg.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        lines = []
    for line in lines:
        key, _, value = line.partition("=")
        if key.strip() == "home" and value.strip().startswith("/"):
            home_bin = Path(value.strip())
            found.append(home_bin.parent if home_bin.name == "bin" else home_bin)
    for entry in sorted((root / "bin").glob("python*")):
        hop = entry
        for _ in range(8):  # a chain of links, each hop's folder readable
            if not hop.is_symlink():
                break
            hop = hop.parent / os.readlink(hop)
            found.append(hop.parent.parent if hop.parent.name == "bin" else hop.parent)
    return found


def _under_any(path: Path, roots: Iterable[Path]) -> bool:
    return any(path == r or r in path.parents for r in roots)


def _unique(paths: Iterable[Path]) -> list[Path]:
    return list(dict.fromkeys(paths))
