"""`tritonbisect run --repro TRACE --oracle ir --from ttgir`: a CPU-only bisect that replays the
recorded TTGIR (Triton of this Python), end to end.

The repository stands in for Triton (a `sitecustomize.py` loaded through `--env PYTHONPATH=.`):
commits 1-3 speak another dialect (their parser rejects the recorded IR, as an older Triton
does), commit 5 aborts in the llir stage. The unreadable commits are skipped, never bad; the
culprit is commit 5, a crash; the report counts the skips.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from compile_support import PLANTS, needs_triton
from oracle_support import needs_traces, scenario

pytestmark = [needs_triton, needs_traces]

DRIFT = '''"""Planted dialect drift: this 'Triton' cannot parse IR of the recorded version."""
from triton._C.libtriton import ir as _ir

_parse = _ir.parse_mlir_module


def parse_mlir_module(path, context):
    import sys
    sys.stderr.write('loc("%s":1:1): error: custom op \\'tt.func\\' is unknown (planted drift)\\n' % path)
    raise RuntimeError("Parse MLIR file failed.")


_ir.parse_mlir_module = parse_mlir_module
'''


def _git(repo: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@x", GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@x")
    return subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=True).stdout.strip()


def test_unreadable_ir_is_skipped_and_the_crash_is_found(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    shas = []
    for i in range(8):
        (repo / "NOTES").write_text(f"change {i}\n")
        site = repo / "sitecustomize.py"
        if i in (1, 2, 3):
            site.write_text(DRIFT)
        elif i >= 5:
            site.write_text(PLANTS["abort"])
        elif site.exists():
            site.unlink()
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "-m", f"change {i}")
        shas.append(_git(repo, "rev-parse", "HEAD"))
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if k not in ("TRITONBISECT_RESULT", "TRITON_INTERPRET")}
    proc = subprocess.run(
        [sys.executable, "-m", "tritonbisect.cli", "run", "--repo", str(repo), "--good", shas[0], "--bad", shas[-1],
         "--build", "true", "--repro", str(scenario("vadd")), "--kernel", "add_kernel", "--oracle", "ir",
         "--from", "ttgir", "--env", "PYTHONPATH=.", "--workdir", str(home), "--json"],
        capture_output=True, text=True, timeout=600, check=False, env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["status"] == "found" and result["culprit"] == shas[5]
    records = [json.loads(line) for line in (home / "sessions" / result["session"] / "journal.jsonl").read_text().splitlines()]
    by_kind = {r["kind"]: r["verdict"] for r in records}
    assert by_kind.get("crash") == "bad" and by_kind.get("pass") == "good"
    unreadable = [r for r in records if r["kind"] == "unreadable_ir"]
    assert unreadable and all(r["verdict"] == "skip" for r in unreadable)
    assert all(shas.index(r["commit"]) in (1, 2, 3) for r in unreadable)
    report = subprocess.run([sys.executable, "-m", "tritonbisect.cli", "report", result["session"], "--workdir",
                             str(home)], capture_output=True, text=True, env=env, check=False)
    assert report.returncode == 0, report.stderr
    assert f"**Unreadable IR:** {len(unreadable)} of" in report.stdout
