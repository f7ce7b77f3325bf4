"""Secrets of the user's environment never reach a build or a test unless passed by name
(`--pass-env NAME`), and no secret (of the environment, or given with `--env`) is written into
session.json, the journal, the cache's meta.json or a report, even by a test that prints its
whole environment. Real sessions of `tritonbisect run` on real git histories."""

from __future__ import annotations

import json
import signal
from pathlib import Path

from engine_repo import BUILD, TEST, env_for, last_json, linear, popen_tb, tb
from waiting import wait_until

SECRETS = {
    "GITHUB_TOKEN": "ghp_fakeGithubToken0123",
    "ANTHROPIC_API_KEY": "sk-ant-fakeAnthropic0123",
    "AWS_ACCESS_KEY_ID": "AKIAFAKEACCESSKEYID",
    "AWS_SECRET_ACCESS_KEY": "fakeAwsSecretAccessKey0123",
    "HF_TOKEN": "hf_fakeHuggingFace0123",
}
# each build and test writes its whole environment beside its logs, and the test prints it too
DUMP = 'env > "$(dirname "$TRITONBISECT_RESULT")/env-$$.txt"'
BUILD_DUMP = BUILD + '; env > "out/build-env.txt"'


def _env(home: Path) -> dict[str, str]:
    return env_for(home, **SECRETS)


def _files_holding(root: Path, value: str) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and not p.is_symlink()
            and value.encode() in p.read_bytes()]


def _seen_by_steps(home: Path, sid: str) -> list[set[str]]:
    dumps = list((home / "sessions" / sid / "steps").rglob("env-*.txt"))
    assert dumps
    return [{line.partition("=")[0] for line in p.read_text().splitlines()} for p in dumps]


def test_secrets_are_kept_from_builds_and_tests_unless_passed_by_name(tmp_path: Path) -> None:
    repo, home = tmp_path / "repo", tmp_path / "home"
    shas = linear(repo, 6, culprit=3)
    proc = tb("run", "--repo", str(repo), "--good", shas[0], "--bad", "main", "--build", BUILD_DUMP,
              "--test", f"{DUMP}; {TEST}", "--pass-env", "HF_TOKEN", "--json", cwd=repo, home=home, env=_env(home))
    assert proc.returncode == 0, proc.stderr
    sid = last_json(proc.stdout)["session"]
    for names in _seen_by_steps(home, sid):
        assert "HF_TOKEN" in names  # passed by name
        assert not names & {"GITHUB_TOKEN", "ANTHROPIC_API_KEY", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"}
        assert "PATH" in names and "HOME" in names
    build_env = (next((home / "worktrees").rglob("build-env.txt"))).read_text()
    assert "GITHUB_TOKEN" not in build_env and "HF_TOKEN=" in build_env
    session = json.loads((home / "sessions" / sid / "session.json").read_text())
    assert session["settings"]["executor"]["pass_env"] == ["HF_TOKEN"]  # the name, never the value
    assert _files_holding(home / "sessions", SECRETS["HF_TOKEN"]) == [
        p for p in _files_holding(home / "sessions", SECRETS["HF_TOKEN"]) if p.name.startswith("env-")]


def test_a_test_that_prints_its_environment_puts_no_secret_into_files_or_reports(tmp_path: Path) -> None:
    repo, home = tmp_path / "repo", tmp_path / "home"
    shas = linear(repo, 6, culprit=3)
    given = "sekrit-given-on-the-command-line"
    # fails on the bad commits after printing its environment and the secrets it was given
    test = 'grep -q ok out/state || { env; echo "my key is $MY_API_KEY"; echo "error: HF_TOKEN=$HF_TOKEN"; exit 1; }'
    proc = tb("run", "--repo", str(repo), "--good", shas[0], "--bad", "main", "--build", BUILD, "--test", test,
              "--env", f"MY_API_KEY={given}", "--env", "PLAIN=visible-value", "--pass-env", "HF_TOKEN",
              "--artifact", "out", "--json", cwd=repo, home=home, env=_env(home))
    assert proc.returncode == 0, proc.stderr
    sid = last_json(proc.stdout)["session"]
    secrets = [*SECRETS.values(), given]
    sdir = home / "sessions" / sid
    for name in ("session.json", "journal.jsonl"):
        text = (sdir / name).read_text()
        assert not [s for s in secrets if s in text], name
    session = json.loads((sdir / "session.json").read_text())
    assert session["settings"]["executor"]["env"]["MY_API_KEY"] == "****"
    assert session["settings"]["executor"]["env"]["PLAIN"] == "visible-value"  # not a secret: kept for resume
    assert f"MY_API_KEY={given}" not in " ".join(session["argv"]) and "MY_API_KEY=****" in session["argv"]
    metas = list((home / "cache").rglob("meta.json"))
    assert metas and not [m for m in metas if any(s in m.read_text() for s in secrets)]
    # the report is read by a process that knows the secrets of its own environment only, or
    # the same secrets again: neither shows one, and what is not a secret stays readable
    for env in (None, _env(home)):
        for fmt in ("md", "json"):
            report = tb("report", sid, "--format", fmt, cwd=repo, home=home, env=env)
            assert report.returncode == 0, report.stderr
            assert not [s for s in secrets if s in report.stdout], fmt
        md = tb("report", sid, cwd=repo, home=home, env=env).stdout
        assert "my key is ****" in md and "HF_TOKEN=****" in md and "PLAIN=visible-value" in md


def test_a_secret_given_with_env_is_asked_for_again_on_resume(tmp_path: Path) -> None:
    repo, home = tmp_path / "repo", tmp_path / "home"
    shas = linear(repo, 30, culprit=19)
    marker = tmp_path / "seen"
    test = f'echo "$MY_TOKEN" >> {marker}; sleep 0.4; {TEST}'
    run = popen_tb("run", "--repo", str(repo), "--good", shas[0], "--bad", "main", "--build", BUILD, "--test", test,
                   "--env", "MY_TOKEN=tok-from-the-command-line", cwd=repo, home=home)
    wait_until(lambda: (home / "sessions").is_dir() and any((home / "sessions").glob("*/journal.jsonl")))
    sdir = next((home / "sessions").iterdir())
    wait_until(lambda: (sdir / "journal.jsonl").read_text().count("\n") >= 2)
    run.send_signal(signal.SIGINT)
    _out, err = run.communicate(timeout=30)
    assert run.returncode == 130, err
    assert "tok-from-the-command-line" not in (sdir / "session.json").read_text()
    refused = tb("resume", sdir.name, cwd=repo, home=home)
    assert refused.returncode == 2
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1 and "--env MY_TOKEN" in lines[0] and "export MY_TOKEN=" in lines[0], refused.stderr
    before = marker.read_text().splitlines()
    resumed = tb("resume", sdir.name, "--json", cwd=repo, home=home, env=env_for(home, MY_TOKEN="tok-again"))
    assert resumed.returncode == 0, resumed.stderr
    assert last_json(resumed.stdout)["culprit"] == shas[19]
    after = marker.read_text().splitlines()[len(before):]
    assert after and set(after) == {"tok-again"}


def test_pass_env_takes_names_only(tmp_path: Path) -> None:
    repo, home = tmp_path / "repo", tmp_path / "home"
    shas = linear(repo, 4, culprit=2)
    proc = tb("run", "--repo", str(repo), "--good", shas[0], "--bad", "main", "--test", TEST, "--build", BUILD,
              "--pass-env", "GITHUB_TOKEN=x", cwd=repo, home=home)
    assert proc.returncode == 2 and "--pass-env expects a variable's name" in proc.stderr


def test_step_keeps_secrets_from_the_test_too(tmp_path: Path) -> None:
    """`git bisect run tritonbisect step`: the same rule, and --pass-env."""
    repo, home = tmp_path / "repo", tmp_path / "home"
    linear(repo, 3, culprit=2)
    dump = tmp_path / "step-env.txt"
    for extra, expect in (([], False), (["--pass-env", "GITHUB_TOKEN"], True)):
        proc = tb("step", "--test", f"env > {dump}", "--workdir", str(home), *extra, cwd=repo, home=home,
                  env=_env(home))
        assert proc.returncode == 0, proc.stderr
        text = dump.read_text()
        assert ("GITHUB_TOKEN=" in text) is expect and "ANTHROPIC_API_KEY" not in text
