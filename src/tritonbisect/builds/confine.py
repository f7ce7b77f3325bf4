"""What a sandboxed command may use besides its folders: its limits, and the host's Unix
sockets it must not reach.

Limits (`TRITONBISECT_SANDBOX_LIMITS`, e.g. `processes=2048,memory=16G,file_size=32G`):

    processes   processes and threads at once         (default 4096)
    memory      bytes of memory                        (default 90% of the machine's)
    file_size   bytes in any one file it writes        (default 64 GiB)

The keeper (core/keeper.py) enforces them: `processes` and `memory` for the whole command in
a cgroup of its own where it may make one (cgroup v1, or a v2 hierarchy delegated to it),
else per process (RLIMIT_NPROC, which the kernel does not apply to root, and RLIMIT_DATA);
`file_size` per process (RLIMIT_FSIZE: a write past it fails with EFBIG). Core dumps are off.
Time is the caller's: every command has its timeout (`--timeout`, `--build-timeout`).

Unix sockets: a daemon's socket accepts connections from anyone who can name it, even on a
read-only mount. The sandbox's /tmp, /var/tmp, /run and $HOME are private; a socket that
lives elsewhere (Ray's raylet and plasma store when Ray's temp folder is on another disk) is
found in /proc/net/unix and covered by /dev/null inside.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from tritonbisect.core.errors import InputError
from tritonbisect.core.loglimit import parse_size

LIMITS_ENV = "TRITONBISECT_SANDBOX_LIMITS"
_NAMES = ("processes", "memory", "file_size")


@dataclass(frozen=True)
class Limits:
    processes: int = 4096
    memory: int = 0  # 0: 90% of the machine's memory
    file_size: int = 64 * 1024**3

    def keeper_options(self) -> list[str]:
        """The keeper's options that apply these limits (cgroup first, rlimits else)."""
        memory = self.memory or _default_memory()
        out = ["--cgroup", "--limit", f"processes={self.processes}", "--limit", f"file_size={self.file_size}",
               "--limit", "core=0"]
        if memory:
            out += ["--limit", f"memory={memory}"]
        return out

    def describe(self) -> str:
        memory = self.memory or _default_memory()
        mem = f"{memory / 1024**3:.0f} GiB memory" if memory else "memory unbounded"
        return f"{self.processes} processes, {mem}, {self.file_size / 1024**3:.0f} GiB per file"


def _default_memory() -> int:
    try:
        pages, size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError):
        return 0
    return int(pages * size * 0.9)


def limits_from_env(env: Mapping[str, str] | None = None) -> Limits:
    """The limits `TRITONBISECT_SANDBOX_LIMITS` sets (unnamed ones keep their default);
    InputError (one line) for a value that does not parse."""
    text = (os.environ if env is None else env).get(LIMITS_ENV, "").strip()
    if not text:
        return Limits()
    values: dict[str, int] = {}
    for part in text.split(","):
        name, eq, value = part.strip().partition("=")
        name = name.strip().replace("-", "_")
        if not eq or name not in _NAMES:
            raise InputError(f"{LIMITS_ENV}: {part.strip()!r}: expected NAME=VALUE with NAME one of "
                             f"{', '.join(_NAMES)} (e.g. processes=2048,memory=16G)")
        try:
            amount = int(value) if name == "processes" else parse_size(value)
        except ValueError:
            raise InputError(f"{LIMITS_ENV}: {name}={value.strip()!r} is not a number"
                             f"{'' if name == 'processes' else ' or a size such as 16G'}") from None
        if amount <= 0:
            raise InputError(f"{LIMITS_ENV}: {name} must be more than 0")
        values[name] = amount
    return Limits(**values)


# --- Unix sockets ---------------------------------------------------------------------------
def host_sockets(private: Iterable[Path], shown: Iterable[Path], own: Iterable[Path],
                 table: Path = Path("/proc/net/unix")) -> list[Path]:
    """The bound Unix sockets of this machine (its network namespace) that a sandbox could
    still name: those outside its `private` folders, or in a folder `shown` again inside
    them, but not in the sandbox's `own` folders (a socket the tool put there for it, such as
    the claude CLI's gate). Paths are resolved (/var/run is /run)."""
    def real(paths: Iterable[Path]) -> list[Path]:
        return [Path(os.path.realpath(p)) for p in paths]

    def under(path: Path, roots: list[Path]) -> bool:
        return any(path == r or r in path.parents for r in roots)

    hidden, back, mine = real(private), real(shown), real(own)
    try:
        lines = table.read_text(encoding="utf-8", errors="replace").splitlines()[1:]
    except OSError:
        return []
    found: list[Path] = []
    for line in lines:
        fields = line.split(None, 7)
        if len(fields) < 8 or not fields[7].startswith("/"):
            continue  # unbound, or abstract (those belong to a network namespace, not shared)
        path = Path(os.path.realpath(fields[7]))
        if under(path, mine) or (under(path, hidden) and not under(path, back)):
            continue
        try:
            if not stat.S_ISSOCK(os.lstat(path).st_mode):
                continue
        except OSError:
            continue
        found.append(path)
    return sorted(set(found))


__all__ = ["LIMITS_ENV", "Limits", "host_sockets", "limits_from_env"]
