"""A session's files are read as someone else's: a commit spelled like an option never reaches
git as one, `report` prints no file but the session's own logs (a test that links its log to a
secret gets nothing), and commit subjects or test output with terminal escapes are shown
without them. Real sessions of `tritonbisect run` on real git histories, edited as an
attacker (or a hostile test) would edit them."""

from __future__ import annotations

import json
from pathlib import Path

from engine_repo import BUILD, TEST, git, last_json, linear, tb

SECRET = "machine github.com login me password hunter2-secret"


def _session(tmp_path: Path, test: str = TEST) -> tuple[Path, Path, str, list[str]]:
    repo, home = tmp_path / "repo", tmp_path / "home"
    shas = linear(repo, 8, culprit=4)
    proc = tb("run", "--repo", str(repo), "--good", shas[0], "--bad", "main", "--build", BUILD, "--test", test,
              "--json", cwd=repo, home=home)
    assert proc.returncode == 0, proc.stderr
    return repo, home, last_json(proc.stdout)["session"], shas


def _edit_journal(home: Path, sid: str, edit) -> None:
    path = home / "sessions" / sid / "journal.jsonl"
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    for rec in records:
        edit(rec)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def _edit_session(home: Path, sid: str, edit) -> None:
    path = home / "sessions" / sid / "session.json"
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))


def test_a_journal_commit_spelled_as_an_option_is_only_a_bad_revision(tmp_path: Path) -> None:
    repo, home, sid, _ = _session(tmp_path)
    planted = tmp_path / "planted"

    def edit(rec: dict) -> None:
        rec["commit"] = f"--output={planted}"

    _edit_journal(home, sid, edit)
    for fmt in ("md", "json"):
        proc = tb("report", sid, "--format", fmt, cwd=repo, home=home)
        assert proc.returncode == 0, proc.stderr
    assert not planted.exists()


def test_a_session_file_commit_spelled_as_an_option_is_refused_in_one_line(tmp_path: Path) -> None:
    repo, home, sid, _ = _session(tmp_path)
    planted = tmp_path / "planted"

    def edit(data: dict) -> None:
        data["phases"][0]["culprit"] = f"--output={planted}"

    _edit_session(home, sid, edit)
    for cmd in (["report", sid], ["status", sid], ["resume", sid]):
        proc = tb(*cmd, cwd=repo, home=home)
        assert proc.returncode == 2, proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and "is corrupt: its culprit '--output=" in lines[0] and "not a commit id" in lines[0]
    assert not planted.exists()


def test_a_phase_name_or_id_that_climbs_is_refused(tmp_path: Path) -> None:
    repo, home, sid, _ = _session(tmp_path)
    for field, value in (("name", "../../../../outside"), ("id", "x; rm -rf ~")):
        def edit(data: dict, field: str = field, value: str = value) -> None:
            if field == "name":
                data["phases"][0]["name"] = value
            else:
                data["id"] = value

        _edit_session(home, sid, edit)
        proc = tb("status", sid, cwd=repo, home=home)
        assert proc.returncode == 2 and "is corrupt" in proc.stderr, proc.stderr


def test_a_test_that_links_its_log_to_a_secret_gets_nothing_into_the_report(tmp_path: Path) -> None:
    secret = tmp_path / "netrc"
    secret.write_text(SECRET + "\n")
    # on the bad commits the test swaps its own log for a link to the secret, then fails
    hostile = (f'grep -q ok out/state || {{ ln -sf {secret} "$(dirname "$TRITONBISECT_RESULT")/test-1.log"; '
               'echo failing; exit 1; }')
    repo, home, sid, shas = _session(tmp_path, test=hostile)
    links = list((home / "sessions" / sid / "steps").rglob("test-1.log"))
    assert any(p.is_symlink() for p in links)  # the test did plant its links
    md = tb("report", sid, cwd=repo, home=home)
    assert md.returncode == 0, md.stderr
    assert "hunter2" not in md.stdout
    # the journal's log field pointed at the secret, or at a link elsewhere in the session
    elsewhere = home / "sessions" / sid / "steps" / "link.log"
    elsewhere.symlink_to(secret)
    for target in (str(secret), str(elsewhere), str(home / "sessions" / sid / "steps" / ".." / ".." / ".." / ".." / "netrc")):
        def edit(rec: dict, target: str = target) -> None:
            for test in rec.get("tests") or []:
                test["log"] = target

        _edit_journal(home, sid, edit)
        md = tb("report", sid, cwd=repo, home=home)
        assert md.returncode == 0, md.stderr
        assert "hunter2" not in md.stdout


def test_the_sessions_own_log_is_still_in_the_report(tmp_path: Path) -> None:
    """The control: the failing test's output (its own log, a plain file) is shown."""
    repo, home, sid, _ = _session(tmp_path, test='grep -q ok out/state || { echo "the kernel is wrong"; exit 1; }')
    md = tb("report", sid, cwd=repo, home=home)
    assert md.returncode == 0 and "the kernel is wrong" in md.stdout, md.stderr


def test_escapes_in_subjects_and_test_output_never_reach_the_terminal(tmp_path: Path) -> None:
    repo, home = tmp_path / "repo", tmp_path / "home"
    shas = linear(repo, 6, culprit=3)
    git(repo, "checkout", "-q", "-b", "work", shas[-1])
    (repo / "extra").write_text("x\n")
    git(repo, "add", "extra")
    git(repo, "commit", "-q", "-m", "harmless\x1b]0;owned\x07\x1b[2J\x1b[1A\r looking")
    test = 'grep -q ok out/state || { printf "boom\\033]8;;http://evil/\\033\\\\click\\033[31m\\r\\n"; exit 1; }'
    proc = tb("run", "--repo", str(repo), "--good", shas[0], "--bad", "work", "--build", BUILD, "--test", test,
              cwd=repo, home=home)
    assert proc.returncode == 0, proc.stderr
    for stream in (proc.stdout, proc.stderr):
        assert "\x1b" not in stream and "\x07" not in stream
    md = tb("report", cwd=repo, home=home)
    assert md.returncode == 0, md.stderr
    assert "\x1b" not in md.stdout and "\x07" not in md.stdout and "\r" not in md.stdout
    assert "boom" in md.stdout


def test_hunt_puts_neither_a_linked_file_nor_a_secret_into_its_issue(tmp_path: Path) -> None:
    """The issue `hunt` files is public: the report in it shows no file a test linked its log
    to, and no secret the test printed (the environment's, or one given with --env)."""
    from engine_repo import env_for

    repo, home = tmp_path / "repo", tmp_path / "home"
    secret = tmp_path / "netrc"
    secret.write_text(SECRET + "\n")
    shas = linear(repo, 10, culprit=6)
    git(repo, "reset", "-q", "--hard", shas[2])  # the first night sees a green head
    test = (f'grep -q ok out/state || {{ echo "key $MY_API_KEY, token $GITHUB_TOKEN"; env; '
            f'ln -sf {secret} "$(dirname "$TRITONBISECT_RESULT")/test-1.log"; exit 1; }}')
    env = env_for(home, GITHUB_TOKEN="ghp_fakeTokenForTheHunt0123")
    args = ["hunt", "--state", str(home / "state.json"), "--workdir", str(home), "--repo", str(repo),
            "--build", BUILD, "--test", test, "--env", "MY_API_KEY=sekrit-key-for-the-hunt",
            "--pass-env", "GITHUB_TOKEN", "--issue-body", str(home / "issue.md"), "--summary", str(home / "summary.md")]
    first = tb(*args, cwd=repo, home=home, env=env)
    assert first.returncode == 0, first.stderr
    git(repo, "reset", "-q", "--hard", shas[-1])  # the next night: a regression
    second = tb(*args, cwd=repo, home=home, env=env, timeout=120)
    assert second.returncode == 5, second.stderr
    issue = (home / "issue.md").read_text()
    assert "## Regression" in issue
    for text in (issue, (home / "summary.md").read_text(), second.stdout, second.stderr):
        assert "hunter2" not in text and "sekrit-key-for-the-hunt" not in text and "ghp_fakeTokenForTheHunt0123" not in text
