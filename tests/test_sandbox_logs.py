"""A hostile build or test against the step logs the tool writes, through the real CLI, with
bubblewrap and with unshare: the tool writes its logs through files it opened itself, in a
folder the sandbox cannot write, and never through a link. The attacks of a build: a dangling
`test-1.log` link to a `.pth` in a venv (the tool would create it: code at every Python
start), a `retry/build.log` link to a file of the user's (the tool would overwrite it); of a
test: its own log replaced by a link to `~/.netrc` (which `report` would print)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from engine_repo import env_for, last_json, linear, tb
from tritonbisect.builds import sandbox as sb
from tritonbisect.core.files import PlantedFile, open_nofollow

NETRC_SECRET = "machine github.com login me password NETRC-i34a-log-secret"
USER_TEXT = "the user's own notes, which no tool may overwrite\n"


@pytest.fixture(params=[sb.BWRAP, sb.UNSHARE])
def backend(request) -> str:
    if sb.detect(request.param) is None:
        pytest.skip(f"{request.param} does not work on this machine")
    return request.param


def _step_dirs(workdir: Path) -> str:
    # the step's own log folder, found as the tool names it (sessions/<id>/steps/<n>-...-<sha12>)
    return f'{workdir}/sessions/*/steps/*-"$(echo "$TRITONBISECT_COMMIT" | cut -c1-12)"'


def build_script(workdir: Path, site: Path, notes: Path) -> str:
    return f"""#!/bin/bash
mkdir -p out && cp state out/state
for d in {_step_dirs(workdir)}; do
  [ -d "$d" ] || continue
  if ln -sf {site}/evil.pth "$d/test-1.log" 2>/dev/null; then echo "ATTACK test-1.log link: written"
  else echo "ATTACK test-1.log link: refused"; fi
  if mkdir -p "$d/retry" 2>/dev/null && ln -sf {notes} "$d/retry/build.log" 2>/dev/null; then
    echo "ATTACK retry/build.log link: written"
  else echo "ATTACK retry/build.log link: refused"; fi
done
# the first build fails as the infrastructure would: the step is tried again (retry/)
if [ ! -e out/failed-once ]; then touch out/failed-once; echo "No space left on device" >&2; exit 1; fi
exit 0
"""


def hostile_test(workdir: Path, netrc: Path) -> str:
    return f"""for d in {_step_dirs(workdir)}; do
  for log in "$d"/test-*.log "$d"/retry/test-*.log; do
    [ -e "$log" ] && ln -sf {netrc} "$log" 2>/dev/null && echo "ATTACK own log link: written"
  done
done
grep -q ok out/state"""


def test_logs_cannot_be_turned_into_links(tmp_path, backend):
    repo, workdir = tmp_path / "repo", tmp_path / "workdir"
    site = tmp_path / "venv" / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    notes = tmp_path / "notes.txt"
    notes.write_text(USER_TEXT)
    netrc = tmp_path / "home" / ".netrc"
    netrc.parent.mkdir()
    netrc.write_text(NETRC_SECRET + "\n")
    shas = linear(repo, 8, culprit=5, files={"build.sh": build_script(workdir, site, notes)})
    env = env_for(workdir, TRITONBISECT_SANDBOX=backend)
    proc = tb("run", "--repo", str(repo), "--good", shas[0], "--bad", "main", "--build", "bash build.sh",
              "--test", hostile_test(workdir, netrc), "--sandbox", "--json", cwd=repo, home=workdir, env=env,
              timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = last_json(proc.stdout)
    assert out["culprit"] == shas[5]
    # the tool wrote no .pth and overwrote nothing of the user's
    assert list(site.iterdir()) == []
    assert notes.read_text() == USER_TEXT
    steps = workdir / "sessions" / out["session"] / "steps"
    assert any(p.name == "build.log" and p.parent.name == "retry" for p in steps.rglob("build.log"))
    links = [p for p in steps.rglob("*") if p.is_symlink()]
    assert links == []
    logs = "".join(p.read_text() for p in steps.rglob("*.log"))
    assert re.search(r"^ATTACK .*: written$", logs, re.M) is None
    report = tb("report", out["session"], cwd=repo, home=workdir, env=env)
    assert report.returncode == 0, report.stderr
    assert "NETRC-i34a" not in report.stdout + report.stderr


def test_the_tool_never_writes_through_a_planted_link(tmp_path):
    """Wherever a link came from (an unsandboxed test, a folder someone shared), the tool's
    own writes of a log refuse it, and a hard link or a pipe, in one line."""
    target = tmp_path / "target.txt"
    target.write_text(USER_TEXT)
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "test-1.log").symlink_to(target)
    (logs / "dangling.log").symlink_to(tmp_path / "venv-evil.pth")
    (logs / "hard.log").hardlink_to(target)
    (tmp_path / "elsewhere").mkdir()
    (logs / "retry").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    import os

    os.mkfifo(logs / "pipe.log")
    for name, why in (("test-1.log", "is a link"), ("dangling.log", "is a link"),
                      ("hard.log", "hard link"), ("retry/build.log", "is a link"), ("pipe.log", "not a plain file")):
        with pytest.raises(PlantedFile, match=why):
            open_nofollow(logs / name)
    assert target.read_text() == USER_TEXT
    assert not (tmp_path / "venv-evil.pth").exists() and list((tmp_path / "elsewhere").iterdir()) == []
    with open_nofollow(logs / "fresh.log") as f:
        f.write(b"ok")
    with open_nofollow(logs / "fresh.log", append=True) as f:
        f.write(b"!")
    assert (logs / "fresh.log").read_bytes() == b"ok!"
