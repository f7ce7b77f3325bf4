"""A hostile build against the git the tool runs next, through the real CLI, with bubblewrap
and with unshare: it may not plant a hook or an fsmonitor command in the worktree's git
folders, swap the worktree's `.git` for a repository of its own (with hooks, borrowing the
real objects through `alternates`), or point `.git` at a folder of the user's that the next
sandboxed command would bind in. And `git bisect run tritonbisect step --sandbox` in the
user's own checkout: nothing lands in its `.git`, which git bisect's own checkouts between
the steps would run.

Every hook or fsmonitor command an attack plants writes a marker into a folder outside every
sandbox if it ever runs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine_repo import GIT_ENV, env_for, git, last_json, linear, tb
from tritonbisect.builds import sandbox as sb

SSH_SECRET = "-----BEGIN OPENSSH PRIVATE KEY----- i34a-sandbox-git-secret"
# the test reads the key the build may have made the sandbox bind in
TEST = "cat \"$HOME/.ssh/id_rsa\" 2>/dev/null | sed 's/^/LEAKED /'; grep -q ok out/state"

# each attack, as the build script's lines (MARKS: the marker folder, HOME_DIR: the user's home)
_FOLDERS = """
if [ -d .git ]; then gd=$PWD/.git; common=$gd
else
  gd=$(sed -n 's/^gitdir: //p' .git)
  common=$(cd "$gd" 2>/dev/null && cd "$(cat commondir)" 2>/dev/null && pwd)
fi
hook='#!/bin/sh
touch MARKS/hook-ran-$$'
"""
ATTACKS = {
    # hooks and an fsmonitor command in the worktree's own git folder and the repository's
    "hooks": _FOLDERS + """
for d in "$gd" "$common"; do
  if mkdir -p "$d/hooks" 2>/dev/null && printf '%s\\n' "$hook" > "$d/hooks/post-checkout" 2>/dev/null; then
    chmod +x "$d/hooks/post-checkout"; echo "ATTACK hook in $d: written"
  else echo "ATTACK hook in $d: refused"; fi
  if git config -f "$d/config" core.fsmonitor "touch MARKS/fsmonitor-ran" 2>/dev/null; then
    echo "ATTACK fsmonitor in $d: written"
  else echo "ATTACK fsmonitor in $d: refused"; fi
done
if [ -d .git ] && mv .git .git-moved 2>/dev/null; then echo "ATTACK .git folder: moved, written"; mv .git-moved .git; fi
""",
    # a repository of its own with a hook and an fsmonitor command, the real objects borrowed
    "planted": _FOLDERS + """
rm -rf evil && git init -q --bare evil
echo "$common/objects" > evil/objects/info/alternates
git --git-dir=evil config core.bare false
git --git-dir=evil config core.fsmonitor "touch MARKS/planted-fsmonitor-ran"
printf '%s\\n' "$hook" > evil/hooks/post-checkout; chmod +x evil/hooks/post-checkout
git --git-dir=evil update-ref HEAD "$(git rev-parse HEAD)"
if printf 'gitdir: %s/evil\\n' "$PWD" > .git 2>/dev/null; then echo "ATTACK planted repository: written"
else echo "ATTACK planted repository: refused"; fi
""",
    # the user's ~/.ssh named as the checkout's git folder
    "gitdir": """
if printf 'gitdir: %s/.ssh\\n' "HOME_DIR" > .git 2>/dev/null; then echo "ATTACK gitdir ~/.ssh: written"
else echo "ATTACK gitdir ~/.ssh: refused"; fi
""",
}


@pytest.fixture(params=[sb.BWRAP, sb.UNSHARE])
def backend(request) -> str:
    if sb.detect(request.param) is None:
        pytest.skip(f"{request.param} does not work on this machine")
    return request.param


def build_script(attack: str, marks: Path, home: Path) -> str:
    body = ATTACKS[attack].replace("MARKS", str(marks)).replace("HOME_DIR", str(home))
    return f"#!/bin/bash\nmkdir -p out && cp state out/state\n{body}\nexit 0\n"


def _setup(tmp_path: Path, attack: str, n: int, culprit: int) -> tuple[Path, Path, Path, Path, list[str]]:
    marks = tmp_path / "marks"
    marks.mkdir()
    home = tmp_path / "user-home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text(SSH_SECRET + "\n")
    repo, workdir = tmp_path / "repo", tmp_path / "workdir"
    shas = linear(repo, n, culprit=culprit, files={"build.sh": build_script(attack, marks, home)})
    return marks, home, repo, workdir, shas


def _hooks(git_dir: Path) -> list[str]:
    hooks = git_dir / "hooks"
    return sorted(p.name for p in hooks.iterdir() if not p.name.endswith(".sample")) if hooks.is_dir() else []


def _logs(workdir: Path) -> str:
    return "".join(p.read_text(errors="replace") for p in sorted(workdir.rglob("*.log")))


def _nothing_happened(marks: Path, repo: Path, logs: str) -> None:
    assert "ATTACK " in logs, logs[-3000:]
    assert ": written" not in logs, logs[-3000:]
    assert SSH_SECRET not in logs
    assert list(marks.iterdir()) == []  # no hook, no fsmonitor command ran
    assert _hooks(repo / ".git") == []
    assert "fsmonitor" not in (repo / ".git" / "config").read_text()


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_run_sandbox_build_cannot_change_the_git_the_tool_runs(tmp_path, backend, attack):
    marks, home, repo, workdir, shas = _setup(tmp_path, attack, 10, 6)
    env = env_for(workdir, TRITONBISECT_SANDBOX=backend, HOME=str(home))
    proc = tb("run", "--repo", str(repo), "--good", shas[0], "--bad", "main", "--build", "bash build.sh",
              "--test", TEST, "--sandbox", "--json", cwd=repo, home=workdir, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert last_json(proc.stdout)["culprit"] == shas[6]
    _nothing_happened(marks, repo, _logs(workdir))
    # each worktree's .git still names its own folder in the user's repository
    trees = [t for t in (workdir / "worktrees").glob("*/[ws][0-9]*") if t.is_dir()]
    assert trees
    for tree in trees:
        text = (tree / ".git").read_text()
        assert text.startswith(f"gitdir: {os.path.realpath(repo)}/.git/worktrees/"), text
        admin = Path(text.split(": ", 1)[1].strip())
        assert _hooks(admin) == [] and not (admin / "config").exists()


@pytest.mark.parametrize("attack", ["hooks", "gitdir"])
def test_git_bisect_run_step_sandbox_leaves_the_users_git_alone(tmp_path, backend, attack):
    """`git bisect run tritonbisect step --sandbox` in the user's own checkout (a `.git`
    folder): git bisect's own checkouts between the steps would run a planted hook."""
    marks, home, repo, workdir, shas = _setup(tmp_path, attack, 8, 5)
    env = env_for(workdir, TRITONBISECT_SANDBOX=backend, HOME=str(home))
    git(repo, "bisect", "start", "main", shas[0])
    step = [sys.executable, "-m", "tritonbisect.cli", "step", "--build", "bash build.sh", "--test", TEST,
            "--sandbox"]
    proc = subprocess.run(["git", "bisect", "run", *step], cwd=repo, env={**env, **GIT_ENV},
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"{shas[5]} is the first bad commit" in proc.stdout
    assert "tritonbisect step: sandbox: " in proc.stderr
    _nothing_happened(marks, repo, _logs(workdir))
    assert (repo / ".git").is_dir()
    # nothing of the tool's beside the user's checkout: its caches are in the workdir
    assert sorted(p.name for p in tmp_path.iterdir()) == ["marks", "repo", "user-home", "workdir"]
    git(repo, "bisect", "reset")


@pytest.mark.parametrize("attack", ["hooks", "planted"])
def test_unsandboxed_the_tool_still_never_runs_what_a_build_planted(tmp_path, attack):
    """Without --sandbox a build runs as the user and can plant what it likes; the git the
    tool runs still ignores it: hooks off, the worktree's git folder as the repository
    records it (the rewritten `.git` is put back), no fsmonitor command."""
    marks, home, repo, workdir, shas = _setup(tmp_path, attack, 10, 6)
    env = env_for(workdir, HOME=str(home))
    proc = tb("run", "--repo", str(repo), "--good", shas[0], "--bad", "main", "--build", "bash build.sh",
              "--test", "grep -q ok out/state", "--json", cwd=repo, home=workdir, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert last_json(proc.stdout)["culprit"] == shas[6]
    assert ": written" in _logs(workdir)  # the attack did land
    assert list(marks.iterdir()) == []
    for tree in (t for t in (workdir / "worktrees").glob("*/[ws][0-9]*") if t.is_dir()):
        assert (tree / ".git").read_text().startswith(f"gitdir: {os.path.realpath(repo)}/.git/worktrees/")


def test_the_users_own_hooks_and_fsmonitor_do_not_run_on_the_tools_worktrees(tmp_path):
    """`git worktree add` and every checkout in a worker's worktree would run the user's
    post-checkout hook (and an fsmonitor command): the tool runs git with both off."""
    marks = tmp_path / "marks"
    marks.mkdir()
    repo, workdir = tmp_path / "repo", tmp_path / "workdir"
    shas = linear(repo, 8, culprit=5)
    hook = repo / ".git" / "hooks" / "post-checkout"
    hook.write_text(f"#!/bin/sh\ntouch {marks}/user-hook-ran-$$\n")
    hook.chmod(0o755)
    git(repo, "config", "core.fsmonitor", f"touch {marks}/user-fsmonitor-ran")
    proc = tb("run", "--repo", str(repo), "--good", shas[0], "--bad", "main", "--build", "mkdir -p out; cp state out/",
              "--test", "grep -q ok out/state", "--json", cwd=repo, home=workdir,
              env=env_for(workdir, GIT_DIR=str(tmp_path / "elsewhere")))
    assert proc.returncode == 0, proc.stderr
    assert last_json(proc.stdout)["culprit"] == shas[5]
    assert list(marks.iterdir()) == []
