"""What a `wheels` session says afterwards -- `report` (the Markdown a user pastes into a Triton
issue), `status`, the confirmation's note -- in versions, installs and the index: nothing of
the version ladder the session searched (its commits, its invented author and dates, "builds").
A real local index (python -m http.server) serves small real wheels; the CLI as a user types it."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from bisectors_world import run_cli, run_json
from oracle_support import scenario
from wheel_index_world import BAD_FROM, TEST_SCRIPT, LocalIndex, write_simple_index, write_wheels

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    root = tmp_path_factory.mktemp("index")
    write_simple_index(root, write_wheels(tmp_path_factory.mktemp("wheels")))
    idx = LocalIndex(root).start()
    yield idx
    idx.stop()


def _ladder(res: dict) -> list[str]:
    """The ladder's commits, from the journal (the only place they are named)."""
    journal = Path(res["session_dir"]) / "journal.jsonl"
    return sorted({json.loads(line)["commit"] for line in journal.read_text().splitlines() if line.strip()})


def _nothing_of_the_ladder(text: str, ladder: list[str]) -> None:
    for sha in ladder:
        assert sha[:7] not in text, sha
    for word in ("tritonbisect@localhost", "2023-", "wheel-ladders", "builds", "commits"):
        assert word not in text, word


def test_report_and_status_speak_of_versions_installs_and_the_index(index, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.py").write_text(TEST_SCRIPT)
    home = tmp_path / "home"
    code, res, err = run_json(["wheels", "--good", "3.0.0", "--bad", "3.6.0", "--test", "python t.py",
                               "--index-url", index.url, "--workdir", str(home)], capsys)
    assert code == 0, err[-3000:]
    assert res["first_bad"] == BAD_FROM and res["last_good"] == "3.3.0"
    ladder = _ladder(res)
    assert "confirming: re-testing 3.4.0 and the version before it, 3.3.0" in err

    code, md, _ = run_cli(["report", res["session"], "--workdir", str(home)], capsys)
    assert code == 0
    assert md.startswith(f"## Bisected: first bad version triton {BAD_FROM} (last good 3.3.0)")
    assert f"- **First bad version:** triton {BAD_FROM} (last good: triton 3.3.0)" in md
    assert "- **Versions:** good 3.0.0 → bad 3.6.0 (6 versions after the good one)" in md
    assert f"- **Package:** `triton` from index {index.url} (--index-url)" in md
    installs = f"{res['installs']} installs ({res['downloads']} downloads, "
    assert installs in md and "· 6 steps" in md
    assert "| # | role | version | outcome | verdict | install | test | worker |" in md
    assert "| 1 | endpoint | 3.0.0 | pass | good | download + install |" in md
    assert "the version before it, 3.3.0, good again" in md
    assert "the test's output with triton 3.4.0" in md  # the failing output, named by its version
    _nothing_of_the_ladder(md, ladder)

    code, status, _ = run_cli(["status", res["session"], "--workdir", str(home)], capsys)
    assert code == 0
    assert f"phase wheels: found, 6 versions in range, first bad version {BAD_FROM} (confidence high)" in status
    assert f"6 steps, 6 test runs, {installs}" in status
    assert "#1 [wheels/endpoint] 3.0.0 good (pass)" in status
    assert "worktrees kept for incremental builds" not in status  # the ladder's checkouts are not the user's
    # the session's own folder is named, the ladder's checkouts and the workdir's venvs are not
    _nothing_of_the_ladder(re.sub(re.escape(str(home)) + r"\S*", "<path>", status), ladder)


def test_the_index_in_the_report_keeps_no_credentials(index, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.py").write_text(TEST_SCRIPT)
    home = tmp_path / "home"
    url = index.url.replace("http://", "http://alice:s3cret@")
    code, res, err = run_json(["wheels", "--good", "3.2.0", "--bad", "3.5.0", "--test", "python t.py",
                               "--index-url", url, "--workdir", str(home)], capsys)
    assert code == 0, err[-3000:]
    code, md, _ = run_cli(["report", res["session"], "--workdir", str(home)], capsys)
    assert code == 0
    assert "- **Package:** `triton` from index http://alice:****@" in md
    assert "s3cret" not in md.split("### Reproduce")[0]


def test_a_repro_without_torch_is_one_line_before_anything_is_installed(tmp_path, monkeypatch, capsys):
    """README's first way in, with README's own set-up: the environment the tool makes has no
    torch; the runtime oracle needs it. One line naming --venv, and nothing listed or installed."""
    trace = scenario("vadd")  # a real H100 trace
    monkeypatch.chdir(tmp_path)
    home = tmp_path / "home"
    dead = LocalIndex(tmp_path / "none")  # never started: listing it would abort (exit 4)
    argv = ["wheels", "--good", "3.4.0", "--bad", "3.6.0", "--repro", str(trace), "--kernel", "add_kernel",
            "--index-url", dead.url, "--workdir", str(home)]
    code, out, err = run_cli(argv, capsys)
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1, err
    assert "--repro runs the kernel with torch" in lines[0] and "--venv DIR" in lines[0]
    assert not (home / "venvs").exists() and not (home / "downloads").exists()
    bare = tmp_path / "bare"
    subprocess.run(["python3", "-m", "venv", "--without-pip", str(bare)], check=True)
    code, out, err = run_cli([*argv, "--venv", str(bare)], capsys)
    assert code == 2 and f"--venv {bare} has no torch" in err and err.count("\n") == 1


PERF_SCRIPT = """\
import random
import triton
slow = triton.add(2, 2) != 4  # the toy's bad versions are half again as slow
print(f"TRITONBISECT_METRIC={(1.5 if slow else 1.0) * random.uniform(0.99, 1.01)}")
"""


def _paths_dropped(value, key=None):
    """A `status --json` without its paths (the session's folders, named as they are on disk)."""
    if isinstance(value, dict):
        return {k: _paths_dropped(v, k) for k, v in value.items() if k not in ("dir", "log", "repo", "cwd")}
    if isinstance(value, list):
        return [_paths_dropped(v, key) for v in value]
    return value


def test_a_timing_regression_names_each_reference_by_its_version(index, tmp_path, monkeypatch, capsys):
    """--regress perf judges each step against a reference (the good version; a culprit's, the
    version before it): every figure says which version, never the ladder's commit."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.py").write_text(PERF_SCRIPT)
    home = tmp_path / "home"
    code, res, err = run_json(["wheels", "--good", "3.2.0", "--bad", "3.4.0", "--test", "python t.py",
                               "--regress", "perf", "--index-url", index.url, "--workdir", str(home)], capsys)
    assert code == 0, err[-3000:]
    assert (res["last_good"], res["first_bad"]) == ("3.3.0", BAD_FROM)
    ladder = _ladder(res)
    against = {t["version"]: t["reason"] for t in res["tested"] if t["role"] != "endpoint" or t["outcome"] == "perf"}
    assert " against 3.2.0 (" in against["3.3.0"] and " against 3.3.0 (" in against[BAD_FROM]
    _nothing_of_the_ladder(json.dumps(res["tested"]) + res["reason"], ladder)

    code, md, _ = run_cli(["report", res["session"], "--workdir", str(home)], capsys)
    assert code == 0
    assert ", 1 search round\n" in md and "· 2 versions after" not in md  # counted in agreement
    _nothing_of_the_ladder(md, ladder)
    code, status, _ = run_cli(["status", res["session"], "--workdir", str(home)], capsys)
    assert code == 0 and "2 versions in range" in status
    _nothing_of_the_ladder(re.sub(re.escape(str(home)) + r"\S*", "<path>", status), ladder)
    code, out, _ = run_cli(["status", res["session"], "--workdir", str(home), "--json"], capsys)
    assert code == 0
    data = json.loads(out)
    assert (data["phases"][0]["good"], data["phases"][0]["culprit"]) == ("3.2.0", BAD_FROM)
    assert [s["version"] for s in data["last_steps"]][:2] == ["3.2.0", "3.4.0"]
    _nothing_of_the_ladder(json.dumps(_paths_dropped(data)), ladder)

    # no regression between the endpoints: the one line that says so names the reference too
    code, res, err = run_json(["wheels", "--good", "3.4.0", "--bad", "3.6.0", "--test", "python t.py",
                               "--regress", "perf", "--index-url", index.url, "--workdir", str(home)], capsys)
    assert code == 3 and res["status"] == "invalid-endpoints", err[-3000:]
    invalid = next(line for line in err.splitlines() if "endpoints invalid" in line)
    assert " against 3.4.0 (" in invalid and " against 3.4.0 (" in res["reason"]
    for sha in _ladder(res):
        assert sha[:7] not in invalid + res["reason"], sha
