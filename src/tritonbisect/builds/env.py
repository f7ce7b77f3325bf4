"""The target virtual environment: where Triton is installed at each step and the test runs.

The tool never imports triton or torch itself; everything about the target environment is
asked of its own interpreter in a subprocess (installed versions are read with
importlib.metadata there, not by importing triton, which may be broken at the commit).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path

from tritonbisect.builds.build_process import prepend_path, read_tail, run_logged
from tritonbisect.builds.cache import file_sha256
from tritonbisect.builds.index_config import uv_binary
from tritonbisect.builds.install_check import WheelUnreadable, check_installed, wheel_record

TRITON_DISTRIBUTIONS = ("triton", "pytorch-triton", "pytorch-triton-rocm", "pytorch-triton-xpu",
                        "triton-rocm", "triton-xpu", "triton-nightly")
# in the env's root: {distribution: sha256 of the wheel we last installed there, verified}
INSTALLED_MARKER = ".tritonbisect-installed.json"
_TOOL_TIMEOUT = 1800.0  # pip install of a wheel; venv creation


class EnvError(Exception):
    """The target environment cannot be made or used (reported by recipes as INFRA)."""


def _clean_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ if base is None else base)
    for var in ("PYTHONHOME", "PYTHONPATH", "VIRTUAL_ENV", "CONDA_PREFIX", "PIP_USER", "__PYVENV_LAUNCHER__"):
        env.pop(var, None)
    env["PYTHONNOUSERSITE"] = "1"
    env.setdefault("PIP_DISABLE_PIP_VERSION_CHECK", "1")
    return env


class TargetEnv:
    """A virtual environment (or any prefix with bin/python) used as the test environment."""

    def __init__(self, root: Path, python: Path, *, owned: bool) -> None:
        self.root = Path(root)
        self.python = Path(python)
        self.owned = owned  # made by us (may be deleted/recreated) or the user's own
        self._abi: str | None = None
        self._has_pip: bool | None = None
        # an overlay of a user's environment: its own site folder, put first on the test's
        # PYTHONPATH (test_env) so that the user's env's own python sees this worker's Triton too
        self.shadows: list[str] = []

    def __repr__(self) -> str:
        return f"TargetEnv({str(self.root)!r}, owned={self.owned})"

    # --- making one ---------------------------------------------------------------------------

    @classmethod
    def ensure(
        cls,
        path: Path,
        *,
        python: str | None = None,
        system_site_packages: bool = False,
        requirements: Iterable[str] = (),
    ) -> TargetEnv:
        """Create (when missing) and return the venv at path: `uv venv` if uv is on PATH,
        else `python -m venv`. `python` picks the interpreter (default: the tool's)."""
        path = Path(path).absolute()
        py = path / "bin" / "python"
        if (path / "pyvenv.cfg").exists() and not py.exists():
            # a venv of ours whose interpreter is gone (python upgraded): make it again
            shutil.rmtree(path, ignore_errors=True)
        if not (py.exists() and (path / "pyvenv.cfg").exists()):
            if path.exists() and any(path.iterdir()):
                raise EnvError(f"{path} exists and is not a virtual environment")
            interpreter = python or sys.executable
            if shutil.which(interpreter) is None and not Path(interpreter).exists():
                raise EnvError(f"python interpreter {interpreter!r} not found")
            path.parent.mkdir(parents=True, exist_ok=True)
            uv = shutil.which("uv")
            if uv:
                cmd = [uv, "venv", "--seed", "--python", interpreter, str(path)]
                if system_site_packages:
                    cmd.insert(2, "--system-site-packages")
            else:
                # without ensurepip (seconds per venv): the tool's own pip serves it through
                # `pip --python` (see pip_command) when the venv has none
                cmd = [interpreter, "-m", "venv", "--without-pip", str(path)]
                if system_site_packages:
                    cmd.insert(3, "--system-site-packages")
            proc = subprocess.run(
                cmd, capture_output=True, text=True, env=_clean_env(), timeout=_TOOL_TIMEOUT
            )
            if proc.returncode != 0 or not py.exists():
                shutil.rmtree(path, ignore_errors=True)
                tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or [""]
                raise EnvError(f"could not create the virtual environment {path}: {tail[0]}")
        env = cls(path, py, owned=True)
        reqs = list(requirements)
        if reqs:
            ok, reason = env.ensure_packages(reqs)
            if not ok:
                raise EnvError(reason)
        return env

    @classmethod
    def existing(cls, venv: Path) -> TargetEnv:
        """The user's own environment (--venv DIR, or --python PY's prefix)."""
        venv = Path(venv).absolute()
        py = venv / "bin" / "python"
        if not py.exists():
            raise EnvError(f"{venv} is not a virtual environment (no bin/python)")
        return cls(venv, py, owned=False)

    @classmethod
    def from_python(cls, python: str) -> TargetEnv:
        """The environment a given interpreter belongs to (--python PY)."""
        exe = shutil.which(python) or python
        if not Path(exe).exists():
            raise EnvError(f"python interpreter {python!r} not found")
        prefix = subprocess.run(
            [exe, "-c", "import sys; print(sys.prefix)"],
            capture_output=True, text=True, env=_clean_env(), timeout=120,
        ).stdout.strip()
        if not prefix:
            raise EnvError(f"python interpreter {python!r} does not run")
        return cls(Path(prefix), Path(exe), owned=False)

    def for_worker(self, worker: int, overlay_root: Path) -> TargetEnv:
        """The environment worker N uses. Worker 0 uses this one. Other workers of an owned
        env get their own sibling venv; other workers of a user's env get an overlay venv
        that sees the user's packages (torch stays) through a .pth file while Triton is
        installed into the overlay itself, so parallel workers never share one Triton."""
        if worker == 0:
            return self
        if self.owned:
            return TargetEnv.ensure(self.root.with_name(f"{self.root.name}-w{worker}"),
                                    python=self.base_python())
        digest = hashlib.sha256(str(self.root).encode()).hexdigest()[:10]
        return self.overlay(Path(overlay_root) / f"overlay-{digest}-w{worker}")

    def overlay(self, root: Path) -> TargetEnv:
        """A venv at root that sees this environment's packages (torch, numpy) through a .pth
        file, while what is installed into it (a Triton) comes first. `venv
        --system-site-packages` would not do: made from a venv, it sees the base
        interpreter's packages, not the venv's."""
        env = TargetEnv.ensure(root, python=self.base_python())
        own = env.site_packages()[0]
        pth = Path(own) / "_tritonbisect_overlay.pth"
        pth.write_text("".join(f"{p}\n" for p in self.site_packages() if p), encoding="utf-8")
        env.shadows = [own]
        return env

    # --- facts --------------------------------------------------------------------------------

    def _query(self, code: str, timeout: float = 120) -> str:
        proc = subprocess.run(
            [str(self.python), "-c", code],
            capture_output=True, text=True, env=_clean_env(), timeout=timeout,
        )
        if proc.returncode != 0:
            raise EnvError(
                f"{self.python} failed: {(proc.stderr.strip().splitlines() or [''])[-1]}"
            )
        return proc.stdout.strip()

    def base_python(self) -> str:
        """The interpreter this env was made from (for sibling/overlay venvs)."""
        return self._query("import sys, os; print(getattr(sys, '_base_executable', sys.executable))")

    def site_packages(self) -> list[str]:
        out = self._query("import site, json; print(json.dumps(site.getsitepackages()))")
        return list(json.loads(out))

    def torch_origin(self) -> str:
        """Where this environment's torch comes from, in words (read without importing torch)."""
        code = (
            "import importlib.metadata as m, importlib.util as u\n"
            "spec = u.find_spec('torch')\n"
            "try: v = m.version('torch')\n"
            "except m.PackageNotFoundError: v = '?'\n"
            "print(v + ' ' + (spec.origin or '') if spec else '')\n"
        )
        try:
            found = self._query(code)
        except (EnvError, subprocess.TimeoutExpired) as exc:
            return f"torch unknown ({exc})"
        if not found:
            return "no torch in it"
        version, _, origin = found.partition(" ")
        where = str(Path(origin).parent.parent) if origin else "?"
        return f"torch {version} from {where}"

    def describe(self) -> str:
        """One line: whose environment this is and where its torch comes from."""
        if self.owned:
            made = f"made by tritonbisect from {self.base_python()}"
            origin = self.torch_origin()
            if origin == "no torch in it":
                origin += " (to test with your torch, pass --venv DIR of an environment that has it)"
            return f"target environment {self.root}: {made}; {origin}"
        return f"target environment {self.root}: yours, used as it is; {self.torch_origin()}"

    def python_abi(self) -> str:
        """e.g. 'cpython-311-linux-x86_64': part of every cache key of a built wheel."""
        if self._abi is None:
            self._abi = self._query(
                "import sys, sysconfig; "
                "print(sys.implementation.cache_tag + '-' + sysconfig.get_platform())"
            ).replace("_", "-")
        return self._abi

    def installed_versions(self, names: Iterable[str]) -> dict[str, str | None]:
        """Installed version of each distribution (None when absent), read with
        importlib.metadata in the env's own python, without importing the package."""
        code = (
            "import json, sys, importlib.metadata as m\n"
            "out = {}\n"
            "for n in json.loads(sys.argv[1]):\n"
            "    try: out[n] = m.version(n)\n"
            "    except m.PackageNotFoundError: out[n] = None\n"
            "print(json.dumps(out))\n"
        )
        proc = subprocess.run(
            [str(self.python), "-c", code, json.dumps(list(names))],
            capture_output=True, text=True, env=_clean_env(), timeout=120,
        )
        if proc.returncode != 0:
            raise EnvError(f"cannot read installed versions: {proc.stderr.strip()[-300:]}")
        return json.loads(proc.stdout)

    def missing_modules(self, modules: Iterable[str]) -> list[str]:
        """Of the importable module names given, those the env cannot find (find_spec)."""
        mods = list(modules)
        if not mods:
            return []
        code = (
            "import json, sys, importlib.util as u\n"
            "print(json.dumps([n for n in json.loads(sys.argv[1]) if u.find_spec(n) is None]))\n"
        )
        proc = subprocess.run(
            [str(self.python), "-c", code, json.dumps(mods)],
            capture_output=True, text=True, env=_clean_env(), timeout=120,
        )
        if proc.returncode != 0:
            return mods
        return list(json.loads(proc.stdout))

    # --- installing ------------------------------------------------------------------------

    def has_pip(self) -> bool:
        if self._has_pip is None:
            self._has_pip = not self.missing_modules(["pip"])
        return self._has_pip

    def pip_command(self) -> list[str]:
        """How to run pip for this env: its own pip, else the tool's pip with --python."""
        if self.has_pip():
            return [str(self.python), "-m", "pip"]
        return [sys.executable, "-m", "pip", "--python", str(self.python)]

    def pip(self, args: list[str], *, log: Path | None = None, append: bool = True) -> tuple[int | None, str]:
        """Run pip ARGS for this env; returns (exit code, output tail)."""
        return self._run_tool([*self.pip_command(), *args], log=log, append=append)

    def _run_tool(self, cmd: list[str], *, log: Path | None, append: bool = True) -> tuple[int | None, str]:
        env = _clean_env()
        env["PATH"] = prepend_path(env, self.python.parent)
        if log is None:
            with tempfile.NamedTemporaryFile(prefix="tritonbisect-pip-", suffix=".log", delete=False) as f:
                tmp_log = Path(f.name)
            try:
                res = run_logged(cmd, cwd=Path.cwd(), env=env, log=tmp_log, timeout=_TOOL_TIMEOUT)
                return res.returncode, read_tail(tmp_log, 16 * 1024)
            finally:
                tmp_log.unlink(missing_ok=True)
        res = run_logged(cmd, cwd=Path.cwd(), env=env, log=log, timeout=_TOOL_TIMEOUT, append=append)
        return res.returncode, read_tail(log, 16 * 1024)

    def ensure_packages(self, requirements: Iterable[str], *, log: Path | None = None,
                        binary_only: bool = False) -> tuple[bool, str]:
        """pip-install the requirements that are absent or whose installed version is outside
        their specifier (build requirements of a --no-build-isolation build: e.g. cmake<4.0
        where cmake 4 is there). Those already met are not touched.
        `binary_only`: wheels only (no sdist is built, so no package's own code runs)."""
        reqs = [r for r in requirements if r.strip()]
        if binary_only:
            # pip's --only-binary does not apply to a direct reference (`name @ URL`, a path)
            direct = [r for r in reqs if "@" in r or "/" in r or r.strip().startswith(".")]
            if direct:
                return False, (f"build requirement {direct[0]!r} names a URL or path: requirements of an "
                               "untrusted tree come from the package index as wheels only")
        names = [_req_name(r) for r in reqs]
        have = self.installed_versions(names)
        missing = unmet_requirements(reqs, [have.get(n) for n in names])
        if not missing:
            return True, ""
        rc, tail = self.pip(["install", *(["--only-binary", ":all:"] if binary_only else []), *missing], log=log)
        if rc != 0:
            return False, f"could not install {', '.join(missing)} into {self.root}: {_last_line(tail)}"
        return True, ""

    def uninstall(self, names: Iterable[str], *, log: Path | None = None) -> tuple[bool, str]:
        present = [n for n, v in self.installed_versions(names).items() if v is not None]
        if not present:
            return True, ""
        rc, tail = self.pip(["uninstall", "-y", *present], log=log)
        if rc != 0:
            return False, f"pip uninstall {' '.join(present)} failed: {_last_line(tail)}"
        return True, ""

    def install_wheel(self, wheel: Path, *, log: Path | None = None,
                      digest: str | None = None) -> tuple[bool, str]:
        """pip install --no-deps --force-reinstall the wheel (the env's other packages stay).

        Skipped ("already installed") when this env already holds exactly that wheel: the
        marker records the sha256 of the last wheel we installed per distribution, and the
        installed version must still be the wheel's. `digest`: the wheel's sha256 when the
        caller knows it (e.g. from the artifact cache), else the file is hashed."""
        dist, version = _wheel_dist(wheel)
        digest = digest or file_sha256(Path(wheel))
        if self._marked(dist, digest) and self.installed_versions([dist]).get(dist) == version:
            return True, "already installed"
        ok, reason = self._pip_install(wheel, dist, log)
        if ok:
            self._mark(dist, digest)
        return ok, reason

    def install_triton(self, wheel: Path, commit: str | None, *, log: Path | None = None,
                       digest: str | None = None) -> tuple[bool, str]:
        """Purge every Triton distribution, install the wheel, and check that what is
        installed is that wheel (install_check.py): its version, the files pip installed,
        no other Triton beside it, and no `+git<sha>` naming another commit. `commit`: the
        commit the wheel was built from; None for a published release.

        pytorch-triton(-rocm) are uninstalled first; `triton` itself is replaced by
        `pip install --force-reinstall` (which uninstalls it first: one pip run less per step).
        When the env already holds exactly this wheel (marker, as in install_wheel) and the
        check passes with no other Triton next to it, pip is not run at all (a re-test on the
        worker that just tested the commit, a resumed session)."""
        dist, _version = _wheel_dist(wheel)
        digest = digest or file_sha256(Path(wheel))
        if self._marked(dist, digest):
            ok, how = self.verify_triton(commit, wheel)
            if ok:
                return True, f"{how} (already installed)"
        purge = [d for d in TRITON_DISTRIBUTIONS if d != dist]
        ok, reason = self.uninstall(purge, log=log)
        if not ok:
            return False, reason
        ok, reason = self._pip_install(wheel, dist, log)
        if not ok:
            return False, reason
        ok, how = self.verify_triton(commit, wheel)
        if ok:
            self._mark(dist, digest)
        return ok, how

    def verify_triton(self, commit: str | None, wheel: Path) -> tuple[bool, str]:
        """Is the installed Triton exactly `wheel` (see install_check.py)?"""
        dist, version = _wheel_dist(wheel)
        try:
            files = wheel_record(Path(wheel))
        except WheelUnreadable as exc:
            return False, str(exc)
        names = tuple(dict.fromkeys((*TRITON_DISTRIBUTIONS, dist)))
        return check_installed(self.installed_versions(names), self.installed_record(dist),
                               wheel_version=version, wheel_files=files, commit=commit,
                               root=self.root, dist=dist)

    def installed_record(self, dist: str) -> str | None:
        """The RECORD of the installed distribution (None when absent or unreadable)."""
        code = (
            "import sys, importlib.metadata as m\n"
            "try: t = m.distribution(sys.argv[1]).read_text('RECORD')\n"
            "except m.PackageNotFoundError: t = None\n"
            "sys.stdout.write('' if t is None else '1' + t)\n"
        )
        proc = subprocess.run([str(self.python), "-c", code, dist], capture_output=True,
                              text=True, env=_clean_env(), timeout=120)
        if proc.returncode != 0 or not proc.stdout:
            return None
        return proc.stdout[1:]

    def installer(self) -> tuple[str, str | None]:
        """("uv", its path) when uv is on PATH or in the env and TRITONBISECT_INSTALLER is not
        "pip"; else ("pip", None). uv installs a wheel from its cache by hard links: several
        times faster than pip on Triton's 250 MB wheels (bench/wheels_installer_bench.py)."""
        choice = os.environ.get("TRITONBISECT_INSTALLER", "auto")
        uv = None if choice == "pip" else uv_binary(str(self.python))
        return ("uv", uv) if uv else ("pip", None)

    def _pip_install(self, wheel: Path, dist: str, log: Path | None) -> tuple[bool, str]:
        """The forced install (uv where available, else pip); the marker forgets `dist` first,
        so a failed or interrupted install is never taken for the previous wheel."""
        self._mark(dist, None)
        tool, uv = self.installer()
        if uv is not None:
            rc, tail = self._run_tool([uv, "pip", "install", "--python", str(self.python), "--no-deps",
                                       "--reinstall", str(wheel)], log=log)
        else:
            rc, tail = self.pip(["install", "--no-deps", "--force-reinstall", str(wheel)], log=log)
        if rc != 0:
            return False, f"{tool} install {Path(wheel).name} failed: {_last_line(tail)}"
        return True, ""

    def _marks(self) -> dict[str, str]:
        try:
            data = json.loads((self.root / INSTALLED_MARKER).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _marked(self, dist: str, digest: str) -> bool:
        return self._marks().get(dist) == digest

    def _mark(self, dist: str, digest: str | None) -> None:
        marks = self._marks()
        if marks.get(dist) == digest:
            return
        marks.pop(dist, None)
        if digest is not None:
            marks[dist] = digest
        path = self.root / INSTALLED_MARKER
        tmp = path.with_name(f"{path.name}.{os.getpid()}")
        tmp.write_text(json.dumps(marks, sort_keys=True), encoding="utf-8")
        os.replace(tmp, path)

    # --- running tests -----------------------------------------------------------------------

    def bin_dir(self) -> Path:
        return self.python.parent

    def test_env(self, base: Mapping[str, str], cache_root: Path) -> dict[str, str]:
        """Environment for one test run: the env's bin first on PATH, VIRTUAL_ENV set, no
        user site, and a fresh TRITON_CACHE_DIR under cache_root (never ~/.triton).

        An overlay's own site folder comes first on PYTHONPATH: a test that names the user's
        environment's interpreter (`V/bin/python test.py`, which another worker installs
        into) imports this worker's Triton all the same."""
        env = dict(base)
        for var in ("PYTHONHOME", "CONDA_PREFIX", "__PYVENV_LAUNCHER__"):
            env.pop(var, None)
        if self.shadows:
            given = env.get("PYTHONPATH")
            env["PYTHONPATH"] = os.pathsep.join([*self.shadows, *([given] if given else [])])
        env["PATH"] = prepend_path(env, self.bin_dir())
        env["VIRTUAL_ENV"] = str(self.root)
        env["PYTHONNOUSERSITE"] = "1"
        cache_root = Path(cache_root)
        cache_root.mkdir(parents=True, exist_ok=True)
        env["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="triton-cache-", dir=cache_root)
        return env


_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def unmet_requirements(reqs: list[str], installed: list[str | None]) -> list[str]:
    """The requirements (PEP 508) the installed versions (None: absent) do not meet.
    Prereleases count (a dev build of cmake meets cmake>=3.20); markers are left to pip."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.version import InvalidVersion, Version

    out = []
    for req, have in zip(reqs, installed, strict=True):
        if have is None:
            out.append(req)
            continue
        try:
            spec = Requirement(req).specifier
            if spec and not spec.contains(Version(have), prereleases=True):
                out.append(req)
        except (InvalidRequirement, InvalidVersion):
            continue  # pip would say what is wrong; an unparsable pin does not force a reinstall
    return out


def _req_name(req: str) -> str:
    m = _NAME.match(req)
    return m.group(1) if m else req.strip()


def _wheel_dist(wheel: Path) -> tuple[str, str]:
    """(normalized distribution name, version) from a wheel's file name (PEP 427)."""
    parts = Path(wheel).name.split("-")
    name = re.sub(r"[-_.]+", "-", parts[0]).lower()
    return name, (parts[1] if len(parts) > 1 else "")


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith("ERROR")]
    return (errors[-1] if errors else lines[-1] if lines else "")[:300]
