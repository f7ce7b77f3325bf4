"""Files copied verbatim beside a runtime oracle's repro.py (rendered from runtime_template.py)
and a replay oracle's replay.py (replay_template.py): standard library only (torch and triton
are imported where a launch needs them), no tritonbisect imports, Python 3.8+ syntax; the
scripts put their own folder first on sys.path and import them by name.

    oracle_core.py      exit codes, the result file, the watchdog, the device, errors read
    oracle_args.py      the recorded arguments rebuilt; the snapshot after a launch
    oracle_launch.py    one launch (the recorded IR in the source's place, when asked)
    oracle_compare.py   tensors against the reference, one line per difference
    replay_workers.py   the replay's isolation: fork server and workers, spawn, none
"""

from __future__ import annotations

import shutil
from pathlib import Path

HERE = Path(__file__).parent
RUNTIME_HELPERS = ("oracle_core.py", "oracle_args.py", "oracle_launch.py", "oracle_compare.py")
REPLAY_HELPERS = (*RUNTIME_HELPERS, "replay_workers.py")


def copy_helpers(out: Path, names: tuple[str, ...] = RUNTIME_HELPERS) -> None:
    """The helpers into `out` (read-only copies replaced)."""
    for name in names:
        dest = out / name
        if dest.exists():
            dest.chmod(0o644)
        shutil.copyfile(HERE / name, dest)
