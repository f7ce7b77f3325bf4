"""`tritonbisect wheels`: bisect published versions of Triton (installs, no builds).

Thin: list the versions (builds/wheel_index.py), make the version ladder and its phase
(domains/wheels/bisector.py), run it as a session with the engine, print the result in versions
(domains/wheels/versions_report.py).
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any, NoReturn

import click

from tritonbisect.core.errors import InputError
from tritonbisect.domains.wheels.target_python import check_torch, target_platform, target_python
from tritonbisect.options.bisect_options import bisect_settings, common_bisect_options, wants_json
from tritonbisect.session.settings import BisectSettings

_dir = click.Path(file_okay=False, path_type=Path)
FEED_NAMES = ("pypi", "triton-nightly", "pytorch-nightly")  # builds/wheel_feeds.py FEEDS, without importing it


@click.command("wheels")
@click.option("--good", required=True, metavar="VERSION", help="A published version where the test passes (e.g. 3.4.0).")
@click.option("--bad", required=True, metavar="VERSION", help="A later published version where it fails.")
@click.option("--package", default=None, help="The distribution (default triton; with --feed, the first of the feed's that holds both versions): triton, pytorch-triton, triton-rocm, triton-nightly, ...")
@click.option("--feed", type=click.Choice(sorted(FEED_NAMES)), help="A named feed: pypi, triton-nightly (Triton's nightly index) or pytorch-nightly (PyTorch's); lists what it holds.")
@click.option("--index-url", "index_urls", multiple=True, metavar="URL", help="A PEP 503/691 simple index (repeatable); replaces the indexes of pip's (or uv's) configuration.")
@click.option("--find-links", "find_links", multiple=True, metavar="DIR|URL", help="Wheels in a directory or a page of links (repeatable); replaces the configured find-links.")
@click.option("--installer", type=click.Choice(["auto", "uv", "pip"]), default="auto", show_default=True, help="How wheels are installed: auto = uv when on PATH or in the env, else pip.")
@click.option("--pre", is_flag=True, help="Include pre-releases and dev versions between the endpoints.")
@click.option("--python", metavar="PY", help="Interpreter for the target venv, or the user's own env's python.")
@click.option("--venv", type=_dir, help="Install into this existing virtual environment (it keeps its torch).")
@click.option("--triton-dir", type=_dir, help="A Triton checkout: order +git nightlies by its history and print the commit range the two versions come from.")
@common_bisect_options
def wheels_cmd(good: str, bad: str, package: str | None, feed: str | None, index_urls: tuple[str, ...],
               find_links: tuple[str, ...], installer: str, pre: bool, python: str | None, venv: Path | None,
               triton_dir: Path | None, **kwargs: Any) -> None:
    """Bisect published versions (releases, nightlies): installs only, no builds."""
    from tritonbisect.builds.wheel_index import list_wheels, normalize_name, unordered_locals
    from tritonbisect.domains.wheels.bisector import (
        WheelsBisector,
        ancestry_order,
        choose_rungs,
        list_or_abort,
        make_ladder,
    )

    _refuse_commit_options(kwargs)
    settings = bisect_settings(**kwargs)
    if not settings.test.wanted:
        raise InputError("give the test to run: --test CMD (or --repro TRACE --kernel K)")
    target = target_python(python, venv)
    check_torch(settings.test.repro, settings.test.oracle, python, venv)
    _choose_installer(installer, target)
    plat = target_platform(target)
    config = _index_config(target, feed, index_urls, find_links)
    if not config.index_urls and not config.find_links:
        raise InputError("no index and no find-links to read (pip's configuration says no-index); "
                         "give --index-url URL or --find-links DIR")

    def lister(name: str) -> list:
        return list_or_abort(list_wheels, normalize_name(name), index_urls=config.index_urls,
                             find_links=config.find_links)

    package, files = _package_files(feed, package, lister, good, bad)
    if not files:
        from tritonbisect.builds.index_config import redact

        where = ", ".join(redact(u) for u in (*config.index_urls, *config.find_links))
        raise InputError(f"{package}: no wheels on {where}; check --package and --index-url")
    versions = sorted({f.version for f in files})
    order, note = ancestry_order(versions, triton_dir) if triton_dir else (None, "")
    if order is None:
        mixed = unordered_locals(versions)
        if mixed:
            note = note or (f"{package} {', '.join(mixed[:3])} have several nightlies (+git<sha>) that PEP 440 "
                            "orders by the label's text, not by date; ordered by version: give --triton-dir "
                            "CHECKOUT to order them by its history")
    if note:
        click.echo(f"tritonbisect wheels: {note}", err=True)
    rungs = choose_rungs(files, plat, good, bad, package=package, pre=pre, order=order)
    ladder, shas = make_ladder(settings.workdir, package, rungs)
    spec = settings.test_spec(cwd=Path.cwd())
    recipe_config = {
        "test": spec.to_dict(), "python": python, "venv": str(venv.resolve()) if venv else None,
        "cwd": str(Path.cwd().resolve()), "package": package, "installer": installer,
    }
    bisector = WheelsBisector(package, rungs, ladder, shas, recipe_config)
    for line in config.describe():  # once the inputs are known good: an error stays one line
        click.echo(f"tritonbisect wheels: {line}", err=True)
    click.echo(f"tritonbisect wheels: {len(rungs)} {package} versions from {rungs[0].version} to "
               f"{rungs[-1].version} for {plat.describe()}", err=True)
    # where the wheels come from, for the report: not where this machine keeps its pip configuration
    index = [re.sub(r" of /[^)]*\)", ")", line) for line in config.describe()
             if line.startswith(("index ", "find-links "))]
    _run(settings, bisector, triton_dir, index, json_out=wants_json(kwargs))


# the shared bisect options that speak of commits, builds or their cache: `wheels --help` does
# not offer them, and given anyway they are refused (the first two have their own line)
_COMMIT_OPTIONS = {"prefer_pass": "--prefer-pass", "prefer_files": "--prefer-files", "first_parent": "--first-parent",
                   "verify_revert": "--verify-revert", "repo_url": "--repo-url", "cache_dir": "--cache-dir",
                   "cache_url": "--cache-url"}
# and what their help says of commits and checkouts, in versions
_HELP_IN_VERSIONS = {
    "test": "Test command (bash), run in the directory you start from with each version installed: exit 0 = pass.",
    "jobs": "Workers testing versions in parallel, each in its own environment.",
    "on_build_failure": "What a version that does not install counts as.",
}
for _param in wheels_cmd.params:
    if _param.name in _COMMIT_OPTIONS and isinstance(_param, click.Option):
        _param.hidden = True
    elif _param.name in _HELP_IN_VERSIONS and isinstance(_param, click.Option):
        _param.help = _HELP_IN_VERSIONS[_param.name]


def _refuse_commit_options(kwargs: dict[str, Any]) -> None:
    given = [flag for name, flag in _COMMIT_OPTIONS.items() if kwargs.get(name)]
    if not given:
        return
    if given[0] in ("--prefer-pass", "--prefer-files"):
        raise InputError("--prefer-pass/--prefer-files weigh commits; wheels bisects versions: give them to the "
                         "commit bisect it prints (with --triton-dir and --narrow, filled in)")
    raise InputError(f"{given[0]} applies to commits and their builds; wheels bisects published versions "
                     "(installs, no commits): drop it")


def _choose_installer(installer: str, target: str) -> None:
    """The installer for this process and the step processes it starts (they inherit it)."""
    from tritonbisect.builds.index_config import uv_binary

    if installer == "uv" and uv_binary(target) is None:
        raise InputError("--installer uv: uv is not on PATH nor in the target environment (pip install uv)")
    os.environ["TRITONBISECT_INSTALLER"] = installer


def _index_config(target: str, feed: str | None, index_urls: tuple[str, ...], find_links: tuple[str, ...]):
    from tritonbisect.builds.index_config import activate, read_config
    from tritonbisect.builds.wheel_feeds import feed_named

    if feed and index_urls:
        raise InputError("--feed and --index-url both name the index; give one")
    urls = (feed_named(feed).index_url,) if feed else index_urls
    config = activate(read_config(target, index_urls=urls, find_links=find_links))
    for problem in config.problems:  # a pip.conf pip cannot read: said at once, not skipped silently
        click.echo(f"tritonbisect wheels: {problem}", err=True)
    return config


def _package_files(feed: str | None, package: str | None, lister: Any, good: str,
                   bad: str) -> tuple[str, list]:
    from tritonbisect.builds.wheel_feeds import feed_named, pick, survey
    from tritonbisect.builds.wheel_index import normalize_name

    if not feed:
        name = normalize_name(package or "triton")
        return name, lister(name)
    found = survey(feed_named(feed), lister, [package] if package else None)
    chosen = pick(found, good, bad)
    held = f"feed {feed} holds " + "; ".join(f.summary() for f in found)
    if chosen is None:
        raise InputError(f"{held}: no wheels there; check --feed and --package")
    names = {w.version for w in chosen.files}
    if good not in names or bad not in names:
        raise InputError(f"{held}: none holds both {good} and {bad}; give --package and versions it lists")
    click.echo(f"tritonbisect wheels: {held}; using {chosen.package}", err=True)
    return normalize_name(chosen.package), chosen.files


def _run(settings: BisectSettings, bisector: Any, triton_dir: Path | None, index: list[str], *,
         json_out: bool) -> NoReturn:
    from tritonbisect.domains.wheels.versions_report import commit_range, wheels_result
    from tritonbisect.options.launch import drive_and_follow
    from tritonbisect.session.session import Session

    session = Session.create(settings.workdir, settings, [bisector.phase()],
                             argv=list(sys.argv[1:]))
    # the ladder's commits are an internal device: every message names the versions
    phase = session.phases()[0]
    session.extra.setdefault("labels", {})[phase.spec.name] = dict(bisector.versions())
    session.extra["index"] = index  # where the wheels come from (credentials redacted), for the report
    session.save()
    result, follow_ups = drive_and_follow(session, json_out=json_out)
    narrowed = follow_ups.get("narrow")
    out = wheels_result(result, session.journal.records(), bisector.versions(), bisector.shas,
                        session.dir)
    out.update(session=session.id, session_dir=str(session.dir), exit_code=result.exit_code,
               outcome=result.outcome)
    out.update(follow_ups)
    if triton_dir is not None:
        out["commit_range"] = commit_range(triton_dir, out["last_good"], out["first_bad"])
    cr = out.get("commit_range") or {}
    if narrowed is not None and cr.get("command"):  # the next command: the commits, the pass as a hint
        from tritonbisect.narrow.next_hint import next_hint

        hint = next_hint(narrowed, triton_dir, cr.get("good"), cr.get("bad"), cr["command"])
        if hint is not None:
            narrowed["prefer_pass"] = hint
            cr["command"] = hint["command"]
            out["prefer_pass"] = hint
    if json_out:
        click.echo(json.dumps(out))
    else:
        click.echo(_summary(out, session))
    raise click.exceptions.Exit(result.exit_code)


def _summary(out: dict[str, Any], session: Any) -> str:
    if out["status"] == "found":
        lines = [f"last good: {out['last_good']}", f"first bad: {out['first_bad']}"]
    elif out["status"] == "inconclusive":
        lines = ["inconclusive: the first bad version is one of " + ", ".join(out["candidates"])]
    else:
        lines = [f"{out['status']}: {out['reason']}"]
    for t in out["tested"]:
        lines.append(f"  {t['version']:<16} {t['outcome']:<14} {t['verdict']}")
    from tritonbisect.options.launch import workdir_flag
    from tritonbisect.session.phases import RESUMABLE

    if any(p.status in RESUMABLE for p in session.phases()):
        then = session.resume_command()
    else:  # finished: resuming would change nothing
        then = f"tritonbisect report {session.id}{workdir_flag(session)}"
    lines.append(f"{out['installs']} installs, {out['downloads']} downloads "
                 f"({out['download_mb']} MB); session {session.id}: {then}")
    cr = out.get("commit_range")
    if cr and cr.get("command"):
        lines.append(f"commits: {cr['command']} --test ...")
    hint = out.get("prefer_pass")
    if hint and hint.get("commits") is not None:
        lines.append(f"  --prefer-pass {' '.join(hint['passes'])} weighs {hint['commits']} of those commits "
                     f"(they touch {', '.join(hint['files'][:4])}{', ...' if len(hint['files']) > 4 else ''})")
    return "\n".join(lines)


COMMANDS: list[click.Command] = [wheels_cmd]
