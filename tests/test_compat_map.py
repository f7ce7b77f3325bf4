"""compat-builder end to end on the toy world, with a scripted model over real HTTP.

One toy world (2 LLVM API breaks) and one workdir (artifact cache, venv) per module, so LLVM
and Triton builds are shared between tests: the builder's fix commits are deterministic, so
the same fix in another test is the same commit and its wheel comes from the cache.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from fake_anthropic import (
    FakeAnthropic,
    hang,
    last_tool_results,
    offered_tools,
    overloaded,
    request_text,
    text,
    tool_use,
)
from testing.toyworld.world import make_world
from tritonbisect.compat_builder.cli import main
from tritonbisect.compat_builder.session_state import MapState, session_dir
from tritonbisect.core.errors import EXIT_MANUAL_FIX_NEEDED
from tritonbisect.domains.llvm.compat_map import read_map

pytestmark = pytest.mark.slow

FAKE_KEY = "sk-ant-api03-FAKE-KEY-compat-builder-test-0123456789"
ESCAPE_TARGET = Path("/tmp/compat-builder-escape-test.txt")


class ToyModel:
    """A scripted model that fixes the toy world's API breaks from the world's truth.

    Analysis stage (no edit tools): a plan. Execution stage: edit_file with the break's exact
    old/new strings, then finish. `wrong_first`: the first attempt at each break writes a
    misspelled name, so its build fails and the second attempt must repair it.
    `noop`: finishes without editing. `probe_escapes`: first tries to read and write
    outside the worktree.
    """

    def __init__(self, truth: dict, *, wrong_first=False, noop=False, probe_escapes=False) -> None:
        self.breaks = truth["llvm_api_breaks"]
        self.wrong_first = wrong_first
        self.noop = noop
        self.probe_escapes = probe_escapes
        self.bodies: list[dict] = []

    def break_of(self, body: dict) -> dict:
        first = body["messages"][0]["content"]
        title = first.splitlines()[0]
        for brk in self.breaks:
            if f"LLVM {brk['commit'][:12]}" in title:
                return brk
        raise AssertionError(f"prompt names no known break: {title}")

    def __call__(self, body: dict):
        self.bodies.append(body)
        brk = self.break_of(body)
        attempt = int(body["messages"][0]["content"].split()[2].rstrip(":"))
        if "edit_file" not in offered_tools(body):
            return text(f"Plan: in {brk['file']} replace {brk['old']} by {brk['new']}.")
        wrong = brk["new"].replace("(", "X(", 1)  # a misspelled new name: does not build
        steps = []
        if self.probe_escapes:
            steps += [
                tool_use("read_file", path="../../etc/passwd"),
                tool_use("read_file", path="/etc/passwd"),
                tool_use("write_file", path="../../escaped.txt", content="x"),
                tool_use("write_file", path=str(ESCAPE_TARGET), content="x"),
            ]
        if not self.noop:
            if self.wrong_first and attempt == 1:
                edit = (brk["old"], wrong)
            elif self.wrong_first:
                edit = (wrong, brk["new"])
            else:
                edit = (brk["old"], brk["new"])
            steps.append(tool_use("edit_file", path=brk["file"], old_string=edit[0], new_string=edit[1]))
        steps.append(tool_use("finish", summary=f"adapt to LLVM {brk['key']}"))
        return steps[_turns_in_execution_stage(body)]


def _turns_in_execution_stage(body: dict) -> int:
    """How many replies the model has given since the execution stage began."""
    messages = body["messages"]
    start = max(i for i, m in enumerate(messages) if m["role"] == "user" and isinstance(m["content"], str))
    return sum(1 for m in messages[start:] if m["role"] == "assistant")


# --- fixtures ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("toyworld")
    return make_world(root / "w", api_breaks=2, llvm_commits=22, triton_commits=24)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("workdir")


@pytest.fixture(scope="module")
def venv(workdir):
    from tritonbisect.builds.env import TargetEnv

    return TargetEnv.ensure(workdir / "probe-venv").root


@pytest.fixture
def api(monkeypatch):
    """Environment for --ai anthropic against a fake server started by the test."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)

    def use(server: FakeAnthropic) -> None:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)

    return use


def cli(*args: str) -> int:
    return main([str(a) for a in args])


def expected_rows(truth: dict, fixes: list[str]) -> list[tuple[str, str]]:
    triton = [truth["bump_parent"], *fixes]
    llvm = [*truth["llvm_last_compatible"], truth["new_llvm"]]
    return list(zip(triton, llvm, strict=True))


def rows_of(path: Path) -> list[tuple[str, str]]:
    return [(r.triton_commit, r.llvm_commit_last_compatible) for r in read_map(path).rows]


def fix_args(world, workdir, venv, branch, *extra):
    brk = world.truth["llvm_api_breaks"][0]
    return ["fix", "--llvm-commit", brk["commit"], "--triton-commit", world.truth["bump_parent"],
            "--branch", branch, "--triton-dir", world.triton, "--llvm-dir", world.llvm,
            "--workdir", workdir, "--venv", venv, "--ai-backoff", "0.01", *extra]


def files_containing(root: Path, needle: bytes) -> list[Path]:
    hits = []
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            try:
                if needle in path.read_bytes():
                    hits.append(path)
            except OSError:
                pass
    return hits


# --- the reference map --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def reference_map(world, workdir, venv, tmp_path_factory):
    """A whole map where the model fixes every break at its first attempt."""
    out = tmp_path_factory.mktemp("out") / "commits.csv"
    model = ToyModel(world.truth)
    mp = pytest.MonkeyPatch()
    mp.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
    with FakeAnthropic([model] * 1000) as server:
        mp.setenv("ANTHROPIC_BASE_URL", server.url)
        rc = cli("map", "--bump", world.truth["bump"], "--triton-dir", world.triton,
                 "--llvm-dir", world.llvm, "--out", out, "--workdir", workdir, "--venv", venv,
                 "--ai-backoff", "0.01")
        requests = list(server.requests)
        # the key really was in use (so test_api_key_never_written could find a leak of it)
        assert server.headers and all(FAKE_KEY in " ".join(h.values()) for h in server.headers)
    mp.undo()
    state = MapState.load(session_dir(workdir, None))
    return rc, out, state, requests


def test_map_fixes_every_break_first_time(world, workdir, reference_map):
    rc, out, state, requests = reference_map
    assert rc == 0
    truth = world.truth
    fixes = [f["commit"] for f in state.fixes]
    assert [f["llvm"] for f in state.fixes] == [b["commit"] for b in truth["llvm_api_breaks"]]
    assert rows_of(out) == expected_rows(truth, fixes)
    meta = read_map(out).metadata
    assert meta["bump"] == meta["final_bad_triton_commit"] == truth["bump"]
    assert (meta["old_llvm"], meta["new_llvm"], meta["final_bad_llvm"]) == (
        truth["old_llvm"], truth["new_llvm"], truth["new_llvm"])
    # one attempt per break, committed by the builder on the compat branch
    assert all(len(f["attempts"]) == 1 for f in state.fixes)
    n = len(truth["llvm_api_breaks"])
    log = subprocess.run(["git", "-C", str(world.triton), "log", "--format=%s%x09%an", f"-{n}",
                          f"compat/{truth['bump'][:8]}"], capture_output=True, text=True).stdout
    assert log.splitlines() == [
        f"compat fix: adapt to LLVM {b['key']}\tcompat-builder" for b in reversed(truth["llvm_api_breaks"])
    ]
    # the user's checkout is untouched
    status = subprocess.run(["git", "-C", str(world.triton), "status", "--porcelain"],
                            capture_output=True, text=True).stdout
    assert status == ""
    # prompts in causal order: LLVM diff, errors, reference fix
    first = requests[0]["messages"][0]["content"]
    positions = [first.index(s) for s in ("## 1. The LLVM change", "## 2. The errors", "## 3. Reference fix")]
    assert positions == sorted(positions)
    brk = truth["llvm_api_breaks"][0]
    assert brk["header"].split("/")[-1] in first and brk["old_symbol"] in first
    assert f"-{brk['old']}" in first.replace("    return ", "").replace("  return ", "") or brk["new"] in first
    # token usage per attempt is in the state
    assert all(a["usage"]["requests"] >= 3 for f in state.fixes for a in f["attempts"])
    # an LLVM commit whose own build fails was a skip, never sent to the AI
    broken = truth["llvm_broken"][0]
    assert all(p["verdict"] == "skip" for p in state.probes if p["llvm"] == broken)
    assert not any(broken[:12] in request_text(r) for r in requests)


def test_api_key_never_written(world, workdir, reference_map):
    rc, out, state, _ = reference_map
    assert rc == 0
    needle = FAKE_KEY.encode()
    # every place the map wrote to: sessions, prompts, transcripts, logs, caches and the probe
    # venv (workdir), the CSV's folder, and both repositories (worktree metadata, branches)
    for written in (workdir, out.parent, world.root):
        assert files_containing(written, needle) == [], written


def test_verify_build_passes(world, workdir, venv, reference_map, capsys):
    _, out, _, _ = reference_map
    rc = cli("verify", "--csv", out, "--triton-dir", world.triton, "--llvm-dir", world.llvm,
             "--build", "--workdir", workdir, "--venv", venv)
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    assert "OK (3 rows, every row builds at both ends)" in captured.out



def test_a_smoke_command_that_cannot_start_is_no_incompatibility(world, workdir, venv, reference_map, capsys):
    """Exit 127 (command not found) says nothing of Triton and LLVM: the run stops in one
    line instead of calling the pair incompatible."""
    _, out, _, _ = reference_map
    rc = cli("verify", "--csv", out, "--triton-dir", world.triton, "--llvm-dir", world.llvm,
             "--build", "--workdir", workdir, "--venv", venv, "--smoke", "no-such-smoke-command-xyz")
    err = capsys.readouterr().err
    assert rc == 4, err
    assert "could not be started" in err and "exit 127" in err and "Traceback" not in err

def test_verify_build_probes_on_a_ray_cluster(world, workdir, venv, reference_map, capsys):
    pytest.importorskip("ray")
    _, out, _, _ = reference_map
    rc = cli("verify", "--csv", out, "--triton-dir", world.triton, "--llvm-dir", world.llvm,
             "--build", "--workdir", workdir, "--venv", venv,
             "--executor", "ray", "--ray-address", "local")
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    assert "probes run on the Ray cluster at local" in captured.err
    assert "OK (3 rows, every row builds at both ends)" in captured.out
    logs = list(Path(workdir).glob("compat/verify-*/line*/*.log"))
    assert logs  # the probes' logs were copied back from the worker
    assert not list(Path(workdir).glob("ray-probes/*/*"))  # and its scratch dropped


def test_verify_names_the_bad_line(world, workdir, reference_map, tmp_path, capsys):
    _, out, _, _ = reference_map
    bad = tmp_path / "bad.csv"
    lines = out.read_text().splitlines()
    lines[-2], lines[-3] = lines[-3], lines[-2]  # two rows out of LLVM order
    bad.write_text("\n".join(lines) + "\n")
    rc = cli("verify", "--csv", bad, "--triton-dir", world.triton, "--llvm-dir", world.llvm)
    assert rc == 1
    assert f"{bad}:{len(lines) - 1}: rows out of LLVM order" in capsys.readouterr().out
    lines[-1] = lines[-1][:-1] + "g"
    bad.write_text("\n".join(lines) + "\n")
    assert cli("verify", "--csv", bad) == 2
    assert f"{bad}:{len(lines)}: llvm_commit_last_compatible must be a 40-hex" in capsys.readouterr().err


def test_first_fix_fails_then_second_succeeds(world, workdir, venv, api, capsys):
    model = ToyModel(world.truth, wrong_first=True)
    with FakeAnthropic([model] * 100) as server:
        api(server)
        rc = cli(*fix_args(world, workdir, venv, "compat/t-retry"))
    assert rc == 0
    state = MapState.load(session_dir(workdir, None))
    assert [a["status"] for a in state.fixes[0]["attempts"]] == ["failed", "accepted"]
    failed = state.fixes[0]["attempts"][0]
    log = Path(failed["log"])
    assert log.name == "attempt-1-build.log" and log.parent == state.dir
    assert "mlirCreateOpX" in log.read_text()
    second = [b for b in model.bodies if b["messages"][0]["content"].startswith("# Attempt 2")]
    assert second, "no second attempt was requested"
    prompt = second[0]["messages"][0]["content"]
    assert str(log) in prompt  # the path of the full log
    assert "error:" in prompt and "mlirCreateOpX" in prompt  # the persisted error text
    assert "## 4. Previous attempt (1)" in prompt
    assert "+  return mlirCreateOpX(ctx, opcode, lhs, rhs);" in prompt  # the first diff
    assert capsys.readouterr().out.strip() == state.result


def test_overloaded_twice_then_success(world, workdir, venv, api):
    model = ToyModel(world.truth)
    with FakeAnthropic([overloaded(times=2), *[model] * 50]) as server:
        api(server)
        rc = cli(*fix_args(world, workdir, venv, "compat/t-529"))
        statuses = len(server.requests)
    assert rc == 0
    state = MapState.load(session_dir(workdir, None))
    attempt = state.fixes[0]["attempts"][0]
    assert attempt["status"] == "accepted"
    assert statuses == attempt["usage"]["requests"] + 2


def test_escapes_are_refused(world, workdir, venv, api, tmp_path):
    model = ToyModel(world.truth, probe_escapes=True)
    outside = ESCAPE_TARGET
    outside.unlink(missing_ok=True)
    with FakeAnthropic([model] * 50) as server:
        api(server)
        rc = cli(*fix_args(world, workdir, venv, "compat/t-escape"))
    assert rc == 0
    results = [r for b in model.bodies for r in last_tool_results(b)]
    errors = [r["content"] for r in results if r.get("is_error")]
    assert any("'..' is refused" in e and "passwd" in e for e in errors)
    assert any("absolute paths are refused" in e and "/etc/passwd" in e for e in errors)
    assert any("'..' is refused" in e and "escaped.txt" in e for e in errors)
    assert len(errors) == 4
    assert not any("root:" in str(r["content"]) for r in results)
    assert not outside.exists()
    state = MapState.load(session_dir(workdir, None))
    assert not (state.dir.parent / "escaped.txt").exists() and not (state.dir / "escaped.txt").exists()


def test_stale_then_manual_fallback_then_resume(world, workdir, venv, api, capsys):
    model = ToyModel(world.truth, noop=True)
    with FakeAnthropic([model] * 50) as server:
        api(server)
        rc = cli(*fix_args(world, workdir, venv, "compat/t-stale", "--max-attempts", "2"))
    assert rc == EXIT_MANUAL_FIX_NEEDED
    err = capsys.readouterr().err
    state = MapState.load(session_dir(workdir, None))
    assert state.phase == "manual"
    assert [a["status"] for a in state.attempts] == ["stale", "stale"]
    assert not any(p["role"].startswith("attempt") for p in state.probes)  # stale: no build
    assert f"compat-builder resume --fix-commit $(git -C {state.worktree} rev-parse HEAD) {state.id}" in err
    # the person's fix, committed on the compat branch in the worktree
    brk = world.truth["llvm_api_breaks"][0]
    worktree = Path(state.worktree)
    path = worktree / brk["file"]
    path.write_text(path.read_text().replace(brk["old"], brk["new"]))
    # a commit that does not descend from the compat branch is refused
    rc = cli("resume", "--fix-commit", world.truth["triton_order"][1], state.id, "--workdir", workdir, "--venv", venv)
    assert rc == 2 and "does not descend from" in capsys.readouterr().err
    subprocess.run(["git", "-C", str(worktree), "-c", "user.name=T", "-c", "user.email=t@x",
                    "commit", "-qam", "compat fix: by hand"], check=True)
    head = subprocess.run(["git", "-C", str(worktree), "rev-parse", "HEAD"],
                          capture_output=True, text=True).stdout.strip()
    rc = cli("resume", "--fix-commit", head, state.id, "--workdir", workdir, "--venv", venv)
    assert rc == 0
    assert capsys.readouterr().out.strip() == head
    assert MapState.load(state.dir).phase == "done"


def test_ai_none_goes_straight_to_manual(world, workdir, venv, capsys):
    rc = cli(*fix_args(world, workdir, venv, "compat/t-none", "--ai", "none"))
    assert rc == EXIT_MANUAL_FIX_NEEDED
    err = capsys.readouterr().err
    assert "manual fix needed" in err and "--ai none" in err
    state = MapState.load(session_dir(workdir, None))
    assert state.phase == "manual" and state.attempts == []
    assert Path(state.incompatible_log).is_file()
    assert cli("status", "--workdir", workdir) == 0
    out = capsys.readouterr().out
    assert f"session   {state.id} (fix), phase manual" in out
    assert f"fixing    LLVM {world.truth['llvm_api_breaks'][0]['commit'][:12]}: 0 attempt(s)" in out


def test_kill_9_mid_map_then_resume_gives_the_same_csv(world, workdir, venv, reference_map, tmp_path, api):
    _, reference_csv, _, _ = reference_map
    # a copy of the world: same shas (the compat branch of the reference map is not there)
    root = tmp_path / "copy"
    shutil.copytree(world.root, root, symlinks=True)
    for repo in (root / "triton", root / "llvm-project"):
        shutil.rmtree(repo / ".git" / "worktrees", ignore_errors=True)  # they belong to the original
    subprocess.run(["git", "-C", str(root / "triton"), "branch", "-D", f"compat/{world.truth['bump'][:8]}"],
                   check=True, capture_output=True)
    out = tmp_path / "commits.csv"
    wd = tmp_path / "wd"
    shutil.copytree(workdir / "cache", wd / "cache")  # share the builds, not the sessions
    common = ["--workdir", wd, "--venv", venv, "--ai-backoff", "0.01"]
    args = ["--triton-dir", root / "triton", "--llvm-dir", root / "llvm-project", *common]
    release = threading.Event()
    model = ToyModel(world.truth)
    calls = {"n": 0}

    def hang_in_second_fix(body):
        if model.break_of(body) is world.truth["llvm_api_breaks"][1]:
            calls["n"] += 1
            if calls["n"] == 2:  # the second request of the second fix: mid-attempt
                return hang(release)
        return model(body)

    env = {**os.environ, "ANTHROPIC_API_KEY": FAKE_KEY}
    with FakeAnthropic([hang_in_second_fix] * 100) as server:
        env["ANTHROPIC_BASE_URL"] = server.url
        proc = subprocess.Popen(
            [sys.executable, "-m", "tritonbisect.compat_builder.cli", "map", "--bump", world.truth["bump"],
             "--out", str(out), *map(str, args)],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )
        try:
            deadline = 120
            while calls["n"] < 2 and proc.poll() is None and deadline > 0:
                server.wait_for_requests(len(server.requests) + 1, timeout=1)
                deadline -= 1
            assert calls["n"] == 2, proc.stderr.read() if proc.poll() is not None else "no hang"
            proc.kill()  # SIGKILL: no cleanup of any kind
            proc.wait()
        finally:
            release.set()
    state = MapState.load(session_dir(wd, None))
    assert state.phase == "fixing" and state.attempts[-1]["status"] == "started"
    assert not out.exists()
    with FakeAnthropic([ToyModel(world.truth)] * 100) as server:
        api(server)
        rc = cli("resume", *common)
    assert rc == 0
    assert rows_of(out) == rows_of(reference_csv)
    meta, ref_meta = read_map(out).metadata, read_map(reference_csv).metadata
    meta.pop("generated_at"), ref_meta.pop("generated_at")
    assert meta == ref_meta
    events = [e["event"] for e in json.loads((state.dir / "state.json").read_text())["events"]]
    assert events.count("attempt-started") == 3  # 2 breaks + the one restarted after the kill
