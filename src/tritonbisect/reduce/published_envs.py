"""`reduce --good VERSION --bad VERSION` (and `workaround --bad VERSION`): one venv per published version, its wheel fetched
and installed as `wheels` installs it (builds/published.py), and linked to the torch of the
interpreter given (`--python`, default the tool's): a `.pth` file lists that interpreter's
site directories, after the venv's own, so the venv's Triton shadows any other."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from tritonbisect.builds.env import EnvError, TargetEnv
from tritonbisect.builds.published import install_published
from tritonbisect.builds.recipes import StepContext
from tritonbisect.builds.wheel_index import WheelFile, list_wheels, normalize_name, platform_of
from tritonbisect.core.errors import AbortError, InputError
from tritonbisect.core.outcome import Kind
from tritonbisect.domains.wheels.bisector import choose_one, choose_rungs, list_or_abort

LINK = "_tritonbisect_linked_env.pth"


def _purelib(env: TargetEnv) -> Path:
    proc = subprocess.run([str(env.python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    if proc.returncode != 0:
        raise AbortError(f"the venv {env.root} does not run: {proc.stderr.strip()[-200:]}")
    return Path(proc.stdout.strip())


def _install(wheel: WheelFile, package: str, python: str, site_dirs: list[str], root: Path) -> str:
    venv = root / "envs" / f"{package}-{wheel.version}"
    try:
        env = TargetEnv.ensure(venv, python=TargetEnv.from_python(python).base_python())
    except EnvError as exc:
        raise AbortError(f"cannot make the venv for {package} {wheel.version}: {exc}") from None
    link = _purelib(env) / LINK
    link.unlink(missing_ok=True)  # while installing, the venv sees no other Triton
    entry = {"filename": wheel.filename, "url": wheel.url, "sha256": wheel.sha256, "version": wheel.version,
             "package": package}
    ctx = StepContext(worktree=venv, log_dir=venv / "logs", worker=0)
    res = install_published(entry, None, ctx, lambda: env, root / "cache")
    if res.kind != Kind.PASS:
        raise AbortError(f"{package} {wheel.version}: {res.reason}")
    link.write_text("".join(f"{d}\n" for d in site_dirs), encoding="utf-8")
    return str(env.python)


def _listing(package: str, python: str, index_urls: tuple[str, ...]) -> tuple[list[WheelFile], Any, list[str]]:
    try:
        plat = platform_of(python)
        site_dirs = TargetEnv.from_python(python).site_packages()
    except Exception:
        raise InputError(f"--python {python}: cannot run it; give the python whose torch the Tritons should use") from None
    # the indexes as pip reads them for this python (an --index-url replaces them), as `wheels` does
    from tritonbisect.builds.index_config import activate, read_config

    config = activate(read_config(python, index_urls=index_urls))
    files = list_or_abort(list_wheels, package, index_urls=config.index_urls, find_links=config.find_links)
    return files, plat, site_dirs


def install_endpoints(good: str, bad: str, *, package: str, python: str, workdir: Path,
                      index_urls: tuple[str, ...] = ()) -> tuple[str, str]:
    """The pythons of two venvs holding `package` at `good` and at `bad` (cached in workdir)."""
    package = normalize_name(package)
    files, plat, site_dirs = _listing(package, python, index_urls)
    rungs = choose_rungs(files, plat, good, bad, package=package, pre=True)
    root = workdir / "reduce"
    return (_install(rungs[0].wheel, package, python, site_dirs, root),
            _install(rungs[-1].wheel, package, python, site_dirs, root))


def install_version(version: str, *, option: str, package: str, python: str, workdir: Path,
                    index_urls: tuple[str, ...] = ()) -> str:
    """The python of a venv holding `package` at `version` (cached in workdir, beside install_endpoints')."""
    package = normalize_name(package)
    files, plat, site_dirs = _listing(package, python, index_urls)
    rung = choose_one(files, plat, version, package=package, option=option)
    return _install(rung.wheel, package, python, site_dirs, workdir / "reduce")
