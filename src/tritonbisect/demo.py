"""The embedded sample for `tritonbisect demo`: a small repository with a planted regression.

The sample "compiles a kernel" (a Python build script checks the sources and writes
`build/kernel.json`, an ignored folder), and its test "launches" it. Its history has:

- a cluster of consecutive commits whose sources do not build (a syntax error, later fixed),
- one planted regression (BLOCK grows past what the launcher handles), after which the test
  dies with SIGSEGV, as a real out-of-bounds kernel would.

Everything is made with `git fast-import` and the running Python: offline, in well under a
second.
"""

from __future__ import annotations

import os
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

from tritonbisect.core.gitrun import git

N_COMMITS = 48
CULPRIT_INDEX = 33  # 0-based; commit 0 is the good endpoint
BROKEN = range(24, 29)  # these commits do not build

BUILD_PY = '''\
"""Build: "compile" every source in src/ and write build/kernel.json."""
import json, pathlib, sys
root = pathlib.Path(__file__).parent
config = {}
for src in sorted((root / "src").glob("*.py")):
    text = src.read_text()
    try:
        code = compile(text, str(src), "exec")
    except SyntaxError as exc:
        print(f"{src.name}:{exc.lineno}: error: {exc.msg}", file=sys.stderr)
        sys.exit(1)
    scope = {}
    exec(code, scope)
    config.update({k: v for k, v in scope.items() if k.isupper()})
out = root / "build"
out.mkdir(exist_ok=True)
(out / "kernel.json").write_text(json.dumps(config))
print("built", sorted(config))
'''

TEST_PY = '''\
"""Test: "launch the kernel" built by builds.py; out-of-bounds tiles crash like a GPU would."""
import json, os, pathlib, signal, sys
config = json.loads((pathlib.Path(__file__).parent / "build" / "kernel.json").read_text())
block, shared = config["BLOCK"], config["SHARED_MEMORY"]
if block * 4 > shared:
    print(f"illegal memory access: tile of {block} floats exceeds {shared} bytes", flush=True)
    os.kill(os.getpid(), signal.SIGSEGV)
assert config["SCALE"] * 2 == config["SCALE"] + config["SCALE"]
print("ok: kernel output matches the reference")
'''

KERNEL = "BLOCK = {block}\nSHARED_MEMORY = 512\nSCALE = {scale}\n"
UTIL_OK = "HELPERS = {n}\n\ndef clamp(x, lo, hi):\n    return max(lo, min(x, hi))\n"
UTIL_BROKEN = "HELPERS = {n}\n\ndef clamp(x, lo, hi)\n    return max(lo, min(x, hi))\n"

SUBJECTS = [
    "Add launcher smoke test",
    "Refactor clamp helper",
    "Document SCALE semantics",
    "Tidy imports",
    "Rename internal helper",
    "Speed up config parsing",
    "Add comments to kernel constants",
    "Bump helper count",
]


@dataclass
class DemoSample:
    repo: Path
    build: str
    test: str
    culprit: str
    broken: list[str]
    good: str
    bad: str
    n_commits: int


def _git(repo: Path, *args: str, input: bytes | None = None) -> str:
    env = dict(os.environ)
    for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        env.pop(name, None)
    env.update(
        GIT_AUTHOR_NAME="Demo Dev",
        GIT_AUTHOR_EMAIL="demo@example.com",
        GIT_COMMITTER_NAME="Demo Dev",
        GIT_COMMITTER_EMAIL="demo@example.com",
        GIT_CONFIG_NOSYSTEM="1",
    )
    return git(args, cwd=repo, env=env, input=input, text=False).decode()


def make_demo_repo(path: Path) -> DemoSample:
    """Create the sample repository at `path` (must not exist or be empty)."""
    path.mkdir(parents=True, exist_ok=True)
    _git(path, "init", "-q")
    _git(path, "symbolic-ref", "HEAD", "refs/heads/main")
    stream: list[bytes] = []

    def blob(text: str) -> bytes:
        data = text.encode()
        return b"data %d\n%s\n" % (len(data), data)

    t0 = 1_700_000_000
    for i in range(N_COMMITS):
        files: dict[str, str] = {}
        if i == 0:
            files = {
                ".gitignore": "build/\n",
                "builds.py": BUILD_PY,
                "test_kernel.py": TEST_PY,
                "src/kernel.py": KERNEL.format(block=64, scale=3),
                "src/util.py": UTIL_OK.format(n=0),
            }
            subject = "Initial import of the sample kernel"
        elif i == CULPRIT_INDEX:
            files = {"src/kernel.py": KERNEL.format(block=256, scale=3)}
            subject = "Use larger BLOCK tiles for throughput"
        elif i in BROKEN:
            files = {"src/util.py": UTIL_BROKEN.format(n=i)}
            subject = "WIP: rework clamp helper" if i == BROKEN[0] else f"WIP: clamp helper, part {i - BROKEN[0] + 1}"
        elif i == BROKEN[-1] + 1:
            files = {"src/util.py": UTIL_OK.format(n=i)}
            subject = "Fix the clamp helper syntax"
        else:
            files = {f"notes/{i:03d}.txt": f"change {i}\n"}
            if i % 3 == 0:
                files["src/util.py"] = UTIL_OK.format(n=i) if i not in BROKEN else UTIL_BROKEN.format(n=i)
            subject = SUBJECTS[i % len(SUBJECTS)] + f" (#{100 + i})"
        when = f"{t0 + i * 3600} +0000"
        msg = subject.encode()
        parts = [
            b"commit refs/heads/main\n",
            b"mark :%d\n" % (i + 1),
            f"author Demo Dev <demo@example.com> {when}\n".encode(),
            f"committer Demo Dev <demo@example.com> {when}\n".encode(),
            b"data %d\n%s\n" % (len(msg), msg),
        ]
        if i:
            parts.append(b"from :%d\n" % i)
        for name, text in files.items():
            parts.append(f"M 100644 inline {name}\n".encode() + blob(text))
        stream.append(b"".join(parts) + b"\n")
    marks = path / ".git" / "demo-marks"
    _git(path, "fast-import", "--quiet", f"--export-marks={marks}", input=b"".join(stream))
    _git(path, "reset", "-q", "--hard", "main")
    shas = {}
    for line in marks.read_text().splitlines():
        mark, sha = line.split()
        shas[int(mark[1:]) - 1] = sha
    marks.unlink()
    order = [shas[i] for i in range(N_COMMITS)]
    py = shlex.quote(sys.executable)
    return DemoSample(
        repo=path,
        build=f"{py} builds.py",
        test=f"{py} test_kernel.py",
        culprit=order[CULPRIT_INDEX],
        broken=[order[i] for i in BROKEN],
        good=order[0],
        bad=order[-1],
        n_commits=N_COMMITS,
    )


def demo_phase(sample: DemoSample):
    from tritonbisect.builds.recipes import TestSpec, recipe_from_config
    from tritonbisect.session.session import PhaseSpec

    recipe = recipe_from_config("command", {"build": sample.build, "test": TestSpec(sample.test).to_dict()})
    return PhaseSpec(
        name="main",
        repo=sample.repo,
        good=sample.good,
        bad=sample.bad,
        recipe_name=recipe.name,
        recipe_config=recipe.config(),
    )
