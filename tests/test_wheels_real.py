"""`tritonbisect wheels` over the real `triton` releases on PyPI (network; skipped without it).

The behaviour change was found by running small kernels on every release from 3.2.0 to 3.9.0
under TRITON_INTERPRET=1 with torch 2.13.0 (CPU): tl.max over a block holding a NaN gives NaN
up to 3.4.0 and the largest number from 3.5.0 on. The venv (linked to the environment running
the tests, so it reuses that torch: real_triton.make_linked_venv) and the downloads live in one
per-session directory: only the versions the bisect tests are downloaded.
"""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from bisectors_world import run_json
from real_triton import make_linked_venv

pytestmark = pytest.mark.slow
SCRIPT = Path(__file__).resolve().parents[1] / "bench" / "wheels_real" / "max_nan.py"


def _online() -> bool:
    try:
        urllib.request.urlopen("https://pypi.org/simple/triton/", timeout=10).close()
        return True
    except OSError:
        return False


def _has_torch() -> bool:
    proc = subprocess.run([sys.executable, "-c", "import torch"], capture_output=True)
    return proc.returncode == 0


@pytest.mark.skipif(not _online(), reason="no network to pypi.org")
@pytest.mark.skipif(not _has_torch(), reason="torch is not installed")
def test_real_releases_name_the_first_bad(tmp_path_factory, capsys, monkeypatch):
    base = tmp_path_factory.getbasetemp() / "real-wheels"  # one per session: kept across tests
    venv = base / "venv"
    if not (venv / "pyvenv.cfg").exists():
        make_linked_venv(venv)
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    code, res, err = run_json(
        ["wheels", "--good", "3.2.0", "--bad", "3.9.0", "--venv", str(venv),
         "--test", f"python {SCRIPT}", "--env", "TRITON_INTERPRET=1", "--timeout", "600",
         "--workdir", str(base / "home")], capsys)
    assert code == 0, err[-3000:]
    assert (res["last_good"], res["first_bad"]) == ("3.4.0", "3.5.0")
    tested = {t["version"] for t in res["tested"]}
    assert res["downloads"] <= len(tested) <= 2 + 4  # endpoints + ceil(log2(11 versions))


@pytest.mark.skipif(not _online(), reason="no network to pypi.org")
@pytest.mark.skipif(not _has_torch(), reason="torch is not installed")
def test_two_workers_on_ones_own_venv_whose_python_the_test_names(tmp_path_factory, capsys, monkeypatch):
    # worker 0 installs into V, worker 1 into an overlay of it; the test runs V/bin/python
    # itself, not the python first on PATH: each worker still tests the release it installed
    base = tmp_path_factory.getbasetemp() / "real-wheels-jobs"
    venv = base / "venv"
    if not (venv / "pyvenv.cfg").exists():
        make_linked_venv(venv)
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    code, res, err = run_json(
        ["wheels", "--good", "3.2.0", "--bad", "3.9.0", "--venv", str(venv), "--jobs", "2",
         "--test", f"{venv}/bin/python {SCRIPT}", "--env", "TRITON_INTERPRET=1", "--timeout", "600",
         "--workdir", str(base / "home")], capsys)
    assert code == 0, err[-3000:]
    assert (res["last_good"], res["first_bad"]) == ("3.4.0", "3.5.0")
    # every test printed the release its own worker installed, on either worker
    session = Path(res["session_dir"])
    labels = json.loads((session / "session.json").read_text())["extra"]["labels"]["wheels"]
    workers = set()
    for line in (session / "journal.jsonl").read_text().splitlines():
        rec = json.loads(line)
        for test in rec.get("tests") or []:
            said = [t for t in Path(test["log"]).read_text().splitlines() if t.startswith("triton ")]
            assert said and said[0].startswith(f"triton {labels[rec['commit']]}:"), (rec["commit"], said)
            workers.add(rec["worker"])
    assert workers == {0, 1}
