"""The settings in session.json: format 2 written and read back, sessions of format 1 (the flat
layout, tests/data/session_v1/) still reported and resumed to the same answer, a newer format
refused in one line."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from engine_repo import journal, last_json, linear, tb
from tritonbisect.core.errors import InputError
from tritonbisect.options.bisect_options import bisect_settings
from tritonbisect.session.judging import TestSettings as Judging  # not a test class
from tritonbisect.session.settings import BisectSettings
from tritonbisect.session.settings_file import (
    FLAT_LAYOUT,
    SCHEMA,
    flat_settings,
    nested_of_flat,
    read_settings,
    settings_record,
)

FIXTURE = Path(__file__).parent / "data" / "session_v1"
# the settings the first sessions had, before any other option was added
FIRST_KEYS = ("jobs", "repeat", "timeout", "env", "on_build_failure", "regress", "first_parent", "workdir",
              "json", "test", "repro", "kernel", "launch_id")


def _install(tmp_path: Path, trim: tuple[str, ...] | None = None) -> tuple[Path, Path, str, list[str], dict]:
    """The fixture's repository made again and its session put in a workdir: (repo, home,
    session id, commits, the session.json as installed)."""
    repo, home = tmp_path / "repo", tmp_path / "home"
    shas = linear(repo, 24, culprit=17)
    texts = {name: (FIXTURE / name).read_text().replace("@HOME@", str(home)).replace("@REPO@", str(repo))
             for name in ("session.json", "journal.jsonl")}
    data = json.loads(texts["session.json"])
    assert (data["phases"][0]["good"], data["phases"][0]["bad"]) == (shas[0], shas[-1])
    if trim is not None:
        data["settings"] = {k: v for k, v in data["settings"].items() if k in trim}
    sdir = home / "sessions" / data["id"]
    sdir.mkdir(parents=True)
    (sdir / "session.json").write_text(json.dumps(data, indent=2))
    (sdir / "journal.jsonl").write_text(texts["journal.jsonl"])
    return repo, home, data["id"], shas, data


def _report_settings(repo: Path, home: Path, sid: str) -> dict:
    res = tb("report", sid, "--format", "json", cwd=repo, home=home)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)["settings"]


def test_a_format_1_session_reports_and_resumes_to_the_same_culprit(tmp_path: Path) -> None:
    repo, home, sid, shas, data = _install(tmp_path)
    status = tb("status", sid, cwd=repo, home=home)
    assert status.returncode == 0, status.stderr
    assert "phase main: running, 23 commits in range" in status.stdout and "4 steps" in status.stdout
    # the settings it wrote, and the settings added since (`pass_env`, the infra patterns, the
    # compile-time clock) at their defaults
    added = {k: v for k, v in flat_settings(BisectSettings()).items() if k not in data["settings"]}
    assert set(added) == {"pass_env", "infra_patterns", "builtin_infra_patterns", "workaround", "perf_design",
                          "verify_samples", "compile_clock"}
    expected = {**{k: v for k, v in data["settings"].items() if k != "json"}, **added}
    assert _report_settings(repo, home, sid) == expected
    before = journal(home, sid)

    res = tb("resume", sid, "--json", cwd=repo, home=home)
    assert res.returncode == 0, res.stderr
    assert last_json(res.stdout)["culprit"] == shas[17]
    assert "2 worker(s)" in res.stderr and "4 finished steps replayed" in res.stderr
    after = journal(home, sid)
    assert after[: len(before)] == before
    searched = [r["commit"] for r in after if r["role"] == "search"]
    assert len(searched) == len(set(searched)), "a finished step was run again"

    saved = json.loads((home / "sessions" / sid / "session.json").read_text())
    assert next(iter(saved)) == "schema" and saved["schema"] == SCHEMA
    settings = saved["settings"]
    assert settings["executor"]["jobs"] == 2 and settings["executor"]["env"] == {"TB_FIXTURE": "1"}
    assert (settings["search"]["first_parent"], settings["search"]["max_tests"]) == (True, 40)
    assert settings["test"]["command"] == data["settings"]["test"]
    assert "json" not in json.dumps(settings)
    assert _report_settings(repo, home, sid) == expected  # the report's shape did not change
    status = tb("status", sid, cwd=repo, home=home)
    assert f"culprit {shas[17]} (confidence high)" in status.stdout


def test_the_first_sessions_settings_load_with_the_later_ones_defaulted(tmp_path: Path) -> None:
    repo, home, sid, shas, data = _install(tmp_path, trim=FIRST_KEYS)
    shown = _report_settings(repo, home, sid)
    defaults = flat_settings(BisectSettings())
    for key, value in shown.items():
        assert value == (data["settings"][key] if key in FIRST_KEYS else defaults[key]), key
    res = tb("resume", sid, "--json", cwd=repo, home=home)
    assert res.returncode == 0, res.stderr
    assert last_json(res.stdout)["culprit"] == shas[17]


def test_a_session_of_a_newer_format_is_refused_in_one_line(tmp_path: Path) -> None:
    repo, home, sid, _shas, data = _install(tmp_path)
    path = home / "sessions" / sid / "session.json"
    path.write_text(json.dumps({"schema": SCHEMA + 1, **data}))
    for args in (("status", sid), ("resume", sid), ("report", sid)):
        res = tb(*args, cwd=repo, home=home)
        assert res.returncode == 2, (args, res.stderr)
        assert res.stderr.splitlines() == [
            f"tritonbisect: error: session file {path} has format {SCHEMA + 1}, and this tritonbisect "
            f"reads formats up to {SCHEMA}: resume it with the newer tritonbisect that wrote it"
        ]
    path.write_text(json.dumps({**data, "schema": "two"}))
    res = tb("status", sid, cwd=repo, home=home)
    assert res.returncode == 2 and res.stderr.splitlines() == [
        f"tritonbisect: error: session file {path} is corrupt: its schema is 'two'"
    ]


def _varied(tmp_path: Path) -> list[BisectSettings]:
    """Settings with every part away from its defaults, between them."""
    first = bisect_settings(test="true", jobs=3, timeout=9.5, env=("A=1",), workdir=str(tmp_path), first_parent=True,
                            flaky="auto", flake_rate="0.1,0.05", confidence=0.9, max_tests=12, on_build_failure="bad",
                            prefer_pass=("TritonGPUCoalesce",), prefer_files=("lib/*.cpp",), verify_revert=True,
                            cache_dir=str(tmp_path / "c"))
    # the Ray options as they would be (--executor ray needs Ray installed to be given)
    first.executor = dataclasses.replace(first.executor, kind="ray", ray_address="local", build_resources={"CPU": 2.0},
                                         test_resources={"GPU": 1.0}, repo_url="https://example.com/r.git")
    return [
        first,
        bisect_settings(repro=str(tmp_path / "t.ndjson"), kernel="k", launch_id=2, oracle="compile",
                        check=("codegen",), codegen_thresholds=("spills=0",), compile_target="cuda:90", narrow=True,
                        reduce_after=True, reduce_level="inputs", reduce_jobs=3, reduce_timeout=30.0,
                        workdir=str(tmp_path)),
        bisect_settings(test="true", regress="perf", repeat=3, threshold="10%", significance=0.02, max_samples=9,
                        higher_is_better=True, workdir=str(tmp_path)),
        BisectSettings(workdir=tmp_path, test=Judging(manual=True)),  # --manual wants a terminal
    ]


def test_format_2_and_the_flat_layout_give_back_the_same_settings(tmp_path: Path) -> None:
    for settings in _varied(tmp_path):
        data = json.loads(json.dumps({"schema": SCHEMA, "settings": settings_record(settings)}))
        assert read_settings(data, tmp_path) == settings
        flat = json.loads(json.dumps(flat_settings(settings)))
        assert read_settings({"settings": flat}, tmp_path) == settings
        assert nested_of_flat(flat) == json.loads(json.dumps(settings_record(settings)))


def test_unknown_keys_are_ignored_and_nulls_take_the_default(tmp_path: Path) -> None:
    flat = {"jobs": 4, "executor": None, "flaky": None, "env": None, "someday": 1, "json": True}
    settings = read_settings({"settings": flat}, tmp_path)
    assert (settings.executor.jobs, settings.executor.kind, settings.search.flaky, settings.executor.env) == \
        (4, "local", "detect", {})
    data = {"schema": SCHEMA, "settings": {"executor": {"jobs": 2, "someday": 1}, "later": {}}}
    assert read_settings(data, tmp_path).executor.jobs == 2
    with pytest.raises(InputError, match="settings are not an object"):
        read_settings({"schema": SCHEMA, "settings": [1]}, tmp_path)


def test_every_setting_has_one_flat_name() -> None:
    """The report shows every setting (under its flat name), and format 1 reads into all of them."""

    def leaves(value: object, path: str) -> list[str]:
        if not dataclasses.is_dataclass(value):
            return [path]
        out: list[str] = []
        for f in dataclasses.fields(value):
            out += leaves(getattr(value, f.name), f"{path}.{f.name}".lstrip("."))
        return out

    named = sorted(".".join(p for p in (part, name) if p) for part, name in FLAT_LAYOUT.values())
    assert named == sorted(leaves(BisectSettings(), ""))


def test_the_reduce_defaults_are_the_reducers() -> None:
    """One definition serves `reduce` and a bisect's --reduce-* options; a saved session's
    reduce settings keep their meaning (the levels a session.json names are the reducer's)."""
    from tritonbisect.session.follow_ups import (
        DEFAULT_JOBS,
        DEFAULT_TIMEOUT,
        LEVELS,
        ReduceOptions,
        parse_levels,
    )

    assert ReduceOptions() == ReduceOptions(levels=list(LEVELS), jobs=DEFAULT_JOBS, timeout=DEFAULT_TIMEOUT)
    assert parse_levels(",".join(ReduceOptions().levels)) == LEVELS == ("source", "ir", "inputs")
