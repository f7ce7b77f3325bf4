"""The GitHub Actions side of `hunt`: the composite action and the reusable workflow.

Validated against the workflow and action JSON schemas (SchemaStore's, vendored by
check-jsonschema; actionlint cannot be installed offline), their shell checked with
shellcheck where it is installed, and their `run:` steps executed by bash night after night
on a real repository, with a recorder standing in for `gh` (GitHub is not reachable here).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from gha_harness import Runner, load_yaml
from test_hunt import TEST, add_commits, history

ROOT = Path(__file__).resolve().parents[1]
ACTION = ROOT / "action.yml"
WORKFLOW = ROOT / ".github" / "workflows" / "regression-hunt.yml"
EXAMPLE = ROOT / "examples" / "nightly-regression-hunt.yml"
SECRET = "ghs_tritonbisectTestTokenNeverPrinted0123456789"
BUILD = "mkdir -p out; cp state out/state"


# --- static checks ---------------------------------------------------------------------------


def test_workflows_and_action_match_their_schemas() -> None:
    pytest.importorskip("check_jsonschema")
    for schema, files in (("vendor.github-workflows", [WORKFLOW, EXAMPLE]), ("vendor.github-actions", [ACTION])):
        proc = subprocess.run(
            [sys.executable, "-m", "check_jsonschema", "--builtin-schema", schema, *map(str, files)],
            capture_output=True, text=True, check=False,
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr


def test_documented_examples_are_valid(tmp_path: Path) -> None:
    pytest.importorskip("check_jsonschema")
    page = (ROOT / "docs" / "hunt.md").read_text()
    section = page[page.index("## In GitHub Actions"):]
    caller, steps = re.findall(r"```yaml\n(.*?)```", section, re.S)[:2]
    (tmp_path / "caller.yml").write_text(caller)
    job = "name: x\non: push\njobs:\n  hunt:\n    runs-on: ubuntu-latest\n" + steps
    (tmp_path / "job.yml").write_text(job)
    proc = subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-workflows",
         str(tmp_path / "caller.yml"), str(tmp_path / "job.yml")],
        capture_output=True, text=True, check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert load_yaml(tmp_path / "caller.yml") == load_yaml(EXAMPLE)  # the same example twice


def test_schema_check_rejects_a_broken_action(tmp_path: Path) -> None:
    """The check above can fail: a composite step without `shell` is refused."""
    pytest.importorskip("check_jsonschema")
    action = load_yaml(ACTION)
    broken = ACTION.read_text().replace("      shell: bash\n", "", 1)
    assert broken != ACTION.read_text() and action["runs"]["steps"][0]["shell"] == "bash"
    bad = tmp_path / "action.yml"
    bad.write_text(broken)
    proc = subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-actions", str(bad)],
        capture_output=True, text=True, check=False,
    )
    assert proc.returncode != 0


def _run_scripts() -> list[tuple[str, str]]:
    out = []
    for path in (ACTION, WORKFLOW):
        data = load_yaml(path)
        steps = data["runs"]["steps"] if path == ACTION else data["jobs"]["hunt"]["steps"]
        out += [(f"{path.name}: {s.get('name')}", s["run"]) for s in steps if "run" in s]
    return out


def test_run_steps_pass_values_through_env_and_pass_shellcheck(tmp_path: Path) -> None:
    scripts = _run_scripts()
    assert len(scripts) >= 6
    for name, script in scripts:
        # an expression inside a script is a script injection; values come in through env:
        assert "${{" not in script, name
        assert "set -x" not in script, name
    if shutil.which("shellcheck") is None:
        pytest.skip("shellcheck is not installed (apt-get install shellcheck)")
    for i, (name, script) in enumerate(scripts):
        path = tmp_path / f"step{i}.sh"
        path.write_text(script)
        proc = subprocess.run(["shellcheck", "-s", "bash", "-S", "warning", str(path)],
                              capture_output=True, text=True, check=False)
        assert proc.returncode == 0, f"{name}:\n{proc.stdout}"


def test_actions_pinned_and_least_privilege() -> None:
    action, workflow, example = load_yaml(ACTION), load_yaml(WORKFLOW), load_yaml(EXAMPLE)
    uses = [s["uses"] for s in action["runs"]["steps"] if "uses" in s]
    uses += [s["uses"] for s in workflow["jobs"]["hunt"]["steps"] if "uses" in s]
    remote = [u for u in uses if not u.startswith("./")]
    assert remote and all(re.fullmatch(r"[\w.-]+/[\w./-]+@[0-9a-f]{40}", u) for u in remote), remote
    for text in (ACTION.read_text(), WORKFLOW.read_text()):
        for line in text.splitlines():
            if re.search(r"uses: [\w-]+/", line):
                assert re.search(r"# v\d+\.\d+\.\d+$", line), f"no version comment: {line}"
    assert workflow["permissions"] == {} and example["permissions"] == {}
    assert workflow["jobs"]["hunt"]["permissions"] == {"contents": "read", "issues": "write"}
    assert example["jobs"]["hunt"]["permissions"] == {"contents": "read", "issues": "write"}
    assert "workflow_call" in workflow["on"]
    assert {"schedule", "workflow_dispatch"} <= set(example["on"])
    # the token reaches only the step that talks to GitHub
    with_token = [s["name"] for s in action["runs"]["steps"] if "github-token" in json.dumps(s.get("env") or {})]
    assert with_token == ["Open or update the issues"]
    for step in workflow["jobs"]["hunt"]["steps"]:
        if "actions/checkout" in step.get("uses", ""):
            assert step["with"]["persist-credentials"] is False


# --- the action, night after night -------------------------------------------------------------


def _recorder_dir(tmp_path: Path) -> Path:
    """`gh` records its arguments (and whether it got a token) instead of calling GitHub; for
    `gh issue list ... --jq` it prints what the test put in GH_RECORDER_LIST, as the filter
    would have. `tritonbisect` runs this checkout's tritonbisect (the action's install step is
    run for real by the slow test below)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    gh = bin_dir / "gh"
    gh.write_text(
        f"#!{sys.executable}\n"
        "import json, os, sys\n"
        "with open(os.environ['GH_RECORDER_LOG'], 'a') as f:\n"
        "    f.write(json.dumps({'argv': sys.argv[1:], 'token': os.environ.get('GH_TOKEN') == os.environ.get('GH_RECORDER_EXPECT'),\n"
        "                        'repo': os.environ.get('GH_REPO')}) + '\\n')\n"
        "if sys.argv[1:3] == ['issue', 'list']:\n"
        "    sys.stdout.write(open(os.environ['GH_RECORDER_LIST']).read() if os.path.exists(os.environ['GH_RECORDER_LIST']) else '')\n"
    )
    tb = bin_dir / "tritonbisect"
    tb.write_text(f"#!/bin/sh\nexec {sys.executable} -m tritonbisect.cli \"$@\"\n")
    for f in (gh, tb):
        f.chmod(f.stat().st_mode | stat.S_IEXEC)
    return bin_dir


class Night:
    def __init__(self, tmp_path: Path, ws: Path) -> None:
        self.tmp = tmp_path
        self.ws = ws
        self.home = tmp_path / "home"
        self.home.mkdir()
        self.bin = _recorder_dir(tmp_path)
        self.log = tmp_path / "gh.jsonl"
        self.list_answer = tmp_path / "gh-list.txt"
        self.n = 0

    def run(self, **inputs: str) -> tuple[Runner, dict[str, str], str]:
        self.n += 1
        temp = self.tmp / f"temp{self.n}"  # RUNNER_TEMP is new for every job
        temp.mkdir()
        runner = Runner(
            workspace=self.ws, temp=temp, home=self.home, path_prefix=[self.bin],
            github={"repository": "acme/kernels", "run_id": str(1000 + self.n), "run_attempt": "1",
                    "token": SECRET, "workspace": str(self.ws)},
            base_env={"GH_RECORDER_LOG": str(self.log), "GH_RECORDER_LIST": str(self.list_answer),
                      "GH_RECORDER_EXPECT": SECRET, "PYTHONPATH": os.pathsep.join(sys.path)},
            step_summary=temp / "step-summary.md",
        )
        runner.step_summary.write_text("")
        args = {"test": TEST, "args": f"--repo . --build '{BUILD}'", "install": "false",
                "cache-key": "toy-hunt", "github-token": SECRET, **inputs}
        outputs, status = runner.run_action(ROOT, args, local_actions={})
        return runner, outputs, status

    def gh_calls(self) -> list[dict]:
        if not self.log.exists():
            return []
        calls = [json.loads(line) for line in self.log.read_text().splitlines()]
        self.log.unlink()
        return calls


def _step(runner: Runner, name: str):
    return next(r for r in runner.records if r.name == name)


def test_action_nights_open_one_issue_per_culprit_and_fail_visibly(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    shas = history(ws, 5)
    night = Night(tmp_path, ws)

    # 1. green: nothing posted, the workdir cache saved without the worktrees
    runner, out, status = night.run()
    assert (status, out["status"], out["exit-code"]) == ("success", "green", "0"), _dump(runner)
    assert night.gh_calls() == []
    save = _step(runner, "Save the workdir")
    workdir = str(night.home / ".cache" / "tritonbisect-hunt")
    assert save.with_["path"].split() == [workdir, f"!{workdir}/worktrees"]
    assert save.with_["key"] == "toy-hunt-Linux-1001-1"
    assert _step(runner, "Restore the workdir (builds, hunt state)").with_["restore-keys"].strip() == "toy-hunt-Linux-"
    assert "## tritonbisect hunt: green" in runner.step_summary.read_text()

    # 2. a regression: one issue, titled with the culprit's sha, body from the hunt
    shas += add_commits(ws, 8, bad_from=3)
    culprit = shas[8]
    runner, out, status = night.run()
    assert (status, out["status"], out["exit-code"], out["culprit"]) == ("success", "new", "5", culprit), _dump(runner)
    calls = night.gh_calls()
    assert [c["argv"][:2] for c in calls] == [["issue", "list"], ["issue", "create"]]
    assert all(c["token"] and c["repo"] == "acme/kernels" for c in calls)
    assert f"{culprit[:12]} in:title" in calls[0]["argv"]
    create = calls[1]["argv"]
    title = create[create.index("--title") + 1]
    body = Path(create[create.index("--body-file") + 1]).read_text()
    assert culprit[:12] in title.split() and culprit in body and "### Reproduce" in body
    verdict = _step(runner, "Verdict")
    assert verdict.returncode == 0 and "::warning title=tritonbisect hunt::new regression" in verdict.stdout
    upload = _step(runner, "Upload the session")
    assert not upload.skipped and "/sessions/" in upload.with_["path"]

    # 3. the same regression the next night: known, nothing posted
    shas += add_commits(ws, 1, bad_from=0)
    runner, out, status = night.run()
    assert (status, out["status"], out["exit-code"]) == ("success", "known", "0"), _dump(runner)
    assert night.gh_calls() == []

    # 4. fixed: a comment on the issue GitHub already has for that culprit
    shas += add_commits(ws, 1, bad_from=None)
    night.list_answer.write_text("17\n")
    runner, out, status = night.run()
    assert (status, out["status"]) == ("success", "fixed"), _dump(runner)
    calls = night.gh_calls()
    assert [c["argv"][:3] for c in calls] == [["issue", "list", "--state"], ["issue", "comment", "17"]]
    comment = calls[1]["argv"]
    assert "Fixed" in Path(comment[comment.index("--body-file") + 1]).read_text()

    # 5. the environment breaks: the job fails visibly, nothing posted
    (tmp_path / "env-broken").write_text("x")
    shas += add_commits(ws, 2, bad_from=None)
    runner, out, status = night.run(test=f"test ! -e {tmp_path / 'env-broken'} && {TEST}")
    assert status == "failure" and out["exit-code"] == "3" and out["status"] == "environment", _dump(runner)
    verdict = _step(runner, "Verdict")
    assert verdict.returncode == 1 and "::error title=tritonbisect hunt::environment (exit 3)" in verdict.stdout
    assert night.gh_calls() == []

    # a usage error fails visibly too
    runner, out, status = night.run(args="--repo . --no-such-option")
    assert status == "failure" and out["exit-code"] == "2"
    assert "::error title=tritonbisect hunt::failed (exit 2)" in _step(runner, "Verdict").stdout

    # the token was never printed nor written anywhere
    for rec in runner.records:
        assert SECRET not in rec.stdout + rec.stderr
    for root in (tmp_path / "home", ws):
        for path in root.rglob("*"):
            if path.is_file() and path.stat().st_size < 5_000_000:
                assert SECRET.encode() not in path.read_bytes(), path


def test_action_reuses_an_issue_of_a_lost_state(tmp_path: Path) -> None:
    """When the cache (and the state in it) is lost, a culprit found again is reported on the
    issue GitHub already has, not as a second issue."""
    ws = tmp_path / "ws"
    history(ws, 4)
    add_commits(ws, 4, bad_from=2)
    night = Night(tmp_path, ws)
    runner, out, _ = night.run(args=f"--repo . --build '{BUILD}' --good HEAD~4")
    assert out["status"] == "new", _dump(runner)
    night.gh_calls()
    shutil.rmtree(night.home / ".cache")  # the cache is evicted
    night.list_answer.write_text("42\n")
    runner, out, _ = night.run(args=f"--repo . --build '{BUILD}' --good HEAD~4")
    assert out["status"] == "new", _dump(runner)
    calls = night.gh_calls()
    assert [c["argv"][:3] for c in calls] == [["issue", "list", "--state"], ["issue", "comment", "42"]]


def _dump(runner: Runner) -> str:
    return "\n".join(
        f"--- {r.name} (rc {r.returncode}, skipped {r.skipped})\n{r.stdout[-1500:]}\n{r.stderr[-3000:]}"
        for r in runner.records
    )


# --- the reusable workflow, with the real install ----------------------------------------------


@pytest.mark.slow
def test_reusable_workflow_job_installs_tritonbisect_and_hunts(tmp_path: Path) -> None:
    """The job as GitHub would run it, but for the remote actions (checkout, setup-python,
    cache, upload): the action's install step makes a venv and pip-installs this checkout."""
    ws = tmp_path / "ws"
    history(ws, 3)
    night = Night(tmp_path, ws)
    night.n += 1
    temp = tmp_path / "jobtemp"
    temp.mkdir()
    runner = Runner(
        workspace=ws, temp=temp, home=night.home, path_prefix=[night.bin.parent / "ghonly"],
        github={"repository": "acme/kernels", "run_id": "7", "run_attempt": "1", "token": SECRET,
                "workspace": str(ws)},
        base_env={"GH_RECORDER_LOG": str(night.log), "GH_RECORDER_LIST": str(night.list_answer),
                  "GH_RECORDER_EXPECT": SECRET},
        step_summary=temp / "summary.md",
    )
    (night.bin.parent / "ghonly").mkdir()
    shutil.copy(night.bin / "gh", night.bin.parent / "ghonly" / "gh")
    runner.step_summary.write_text("")
    status = runner.run_job(
        WORKFLOW, "hunt",
        {"test": TEST, "args": f"--repo . --build '{BUILD}'", "setup": "echo preparing > setup.log",
         "cache-key": "job-hunt"},
        local_actions={"./.tritonbisect": ROOT},
    )
    assert status == "success", _dump(runner)
    hunt = _step(runner, "Hunt")
    assert hunt.outputs["status"] == "green"
    assert (ws / "setup.log").read_text() == "preparing\n"
    checkout = [r for r in runner.records if (r.uses or "").startswith("actions/checkout")]
    assert checkout[0].with_["repository"] == "acme/kernels" and checkout[0].with_["fetch-depth"] == "0"
    assert (temp / "tritonbisect-venv" / "bin" / "tritonbisect").exists()
