"""A linear toy history whose test reports several cases, each broken at its own commit.

Every commit holds `cases/<name>` per case: "ok" before the case's culprit, "bad" from it
on (a case may also be bad from the first commit: it fails at the good endpoint). A case may
break a second time (`second`: `cases/<name>.2` turns bad there, so the revert of its first
culprit still fails), or have its line edited again (`edited`: the revert of its culprit no
longer applies at the bad commit). Commits listed as broken hold BROKEN and do not build. The build copies `cases/` into the ignored
`out/`; the test (`CasesWorld.test`, a script outside the repository) reads it back and
writes `{"status": ..., "cases": {name: "pass" | "mismatch"}}` to $TRITONBISECT_RESULT, as
the whole-program replay oracle does, and exits 1 when a case fails (`CasesWorld.env` can
make it judge some cases only, and report no cases at all). Each build and each
test appends a line to a count file, so a benchmark can count them.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from testing.toyworld.gitstream import CommitSpec, write_history

TEST_SCRIPT = '''import json, os, sys
from pathlib import Path
count = os.environ.get("CASES_COUNT")
if count:
    with open(count, "a") as f:
        f.write("test\\n")
only = [c for c in os.environ.get("CASES_ONLY", "").split(",") if c]
cases = {}
for path in sorted(Path("out/cases").iterdir()):
    name = path.name.split(".")[0]
    if only and name not in only:
        continue
    ok = path.read_text().strip() == "ok"
    cases[name] = "pass" if ok and cases.get(name, "pass") == "pass" else "mismatch"
status = "mismatch" if "mismatch" in cases.values() else "pass"
result = os.environ.get("TRITONBISECT_RESULT")
if result:
    data = {"status": status} if os.environ.get("CASES_PLAIN") else {"status": status, "cases": cases}
    Path(result).write_text(json.dumps(data))
sys.exit(1 if status != "pass" else 0)
'''


@dataclass
class CasesWorld:
    repo: Path
    shas: list[str]  # oldest first: shas[0] is the good endpoint, shas[-1] the bad one
    culprits: dict[str, int]  # case -> index of its culprit (0: bad from the first commit)
    script: Path

    @property
    def build(self) -> str:
        count = shlex.quote(str(self.repo.parent / "count"))
        return (f"echo build >> {count}; if [ -e BROKEN ]; then echo 'error: does not build' >&2; exit 1; fi; "
                "rm -rf out; mkdir -p out; cp -r cases out/")

    @property
    def test(self) -> str:
        return f"{shlex.quote(sys.executable)} {shlex.quote(str(self.script))}"

    @property
    def count_file(self) -> Path:
        return self.repo.parent / "count"

    def env(self, only: Iterable[str] = (), *, plain: bool = False) -> dict[str, str]:
        """What the test needs in its environment (CASES_ONLY: judge these cases only;
        CASES_PLAIN: report the overall status alone, as a test without cases does)."""
        out = {"CASES_COUNT": str(self.count_file)}
        if only:
            out["CASES_ONLY"] = ",".join(only)
        if plain:
            out["CASES_PLAIN"] = "1"
        return out

    def counts(self) -> dict[str, int]:
        lines = self.count_file.read_text().split() if self.count_file.exists() else []
        return {"builds": lines.count("build"), "tests": lines.count("test")}

    def culprit(self, case: str) -> str:
        return self.shas[self.culprits[case]]


def make_cases_world(root: Path, n: int, culprits: Mapping[str, int], *, broken: Iterable[int] = (),
                     second: Mapping[str, int] | None = None, edited: Mapping[str, int] | None = None) -> CasesWorld:
    """`n` commits in root/repo; case c is bad from commit culprits[c] on."""
    root.mkdir(parents=True, exist_ok=True)
    repo = root / "repo"
    broken = set(broken)
    commits = []
    for i in range(n):
        tree = {f"cases/{case}": ("bad\n" if i >= at else "ok\n") for case, at in culprits.items()}
        for case, at in (second or {}).items():
            tree[f"cases/{case}.2"] = "bad\n" if i >= at else "ok\n"
        for case, at in (edited or {}).items():
            if i >= at:
                tree[f"cases/{case}"] = "bad, edited again\n"
        tree.update({f"log/{i}": f"{i}\n", ".gitignore": "out/\n"})  # a change of its own in each commit
        if i in broken:
            tree["BROKEN"] = "x\n"
        commits.append(CommitSpec(tree=tree, subject=f"c{i}", timestamp=1_700_000_000 + 60 * i))
    shas = write_history(repo, commits)
    script = root / "cases_test.py"
    script.write_text(TEST_SCRIPT)
    return CasesWorld(repo, shas, dict(culprits), script)
