"""How typed the seams between tritonbisect's packages are, measured the same way on any checkout.

    python bench/seams_bench.py [--root DIR] [--label NAME] [--mypy] [--coverage TEST ...]
    python bench/seams_bench.py --before DIR [--mypy] --write   # side by side into RESULTS.md

Every figure is read from the source of `--root` (default: this checkout) by its syntax tree,
so a checkout from before a refactor and one from after are measured alike:

- the files a newcomer touches for each of the three common changes:
  - a new domain: the files of a domain package (its `__init__`, recipe and command; the
    bisector and hunt target are optional) plus every module outside `domains/` that names
    three or more of the domain packages (the places every domain is listed);
  - a new oracle kind: the modules that compare something to an oracle kind's name
    (`== "ir"`, `in ("compile", "ir")`) or list two or more of them (a click choice), plus
    one new generator module;
  - a new verdict rule: the modules that decide a verdict from outcome kinds (build the
    kind -> verdict mapping, combine repeated runs) or read the result of such a rule back
    as text (`kind == "flaky"`), plus the test of the rule;
- string-key lookups of journal records: `x["key"]` and `x.get("key")` whose key is a field
  of a journal record (a step, its build and tests), in the packages that read journals;
- parameters typed `Any` (and of them `ui: Any` / `pool: Any`);
- `mypy --strict` errors (with `--mypy`: the project's configuration plus --strict);
- package cycles: strongly connected components of the graph of imports between packages
  (a domain package `domains/<name>` counts as a package of its own);
- functions with 9 or more parameters, and modules past 600 lines;
- a coverage lower bound (with `--coverage TEST...`: pytest with pytest-cov over those tests,
  the code imported from `--root`: the tests not run only add coverage).
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE / "bench"))

# the fields of a journal record and of its build / test entries (session/journal.py)
RECORD_KEYS = {
    "seq", "round", "worker", "seconds", "commit", "phase", "role", "kind", "verdict", "reason",
    "started", "finished", "dir", "node", "undoes", "build", "record", "cases", "revert_tree", "tests",
    "attempts", "perf", "judged", "manual", "exit", "signal", "log", "cached", "performed", "timed_out",
    "kept", "published", "built", "metric",
}
# the packages whose modules read journal records (the oracles' own scripts do not)
JOURNAL_READERS = ("session", "reports", "hunt", "narrow", "reduce", "commands", "domains", "executors", "core")
ORACLE_KINDS = {"runtime", "compile", "ir", "replay"}
DOMAINS = ("command", "triton", "llvm", "torch", "wheels")


def modules(src: Path) -> dict[str, Path]:
    out = {}
    for path in src.rglob("*.py"):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def parsed(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


def package_of(module: str) -> str:
    parts = module.split(".")
    if len(parts) >= 3 and parts[1] == "domains":
        return f"domains.{parts[2]}"
    return parts[1] if len(parts) > 1 else parts[0]


def import_graph(src: Path) -> dict[str, set[str]]:
    known = modules(src)
    edges: dict[str, set[str]] = defaultdict(set)
    for name, path in known.items():
        for node in ast.walk(parsed(path)):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [f"{node.module}.{a.name}" for a in node.names]
                names = [n if n in known else node.module for n in names]
            for target in names:
                if target in known and target != name and not name.startswith(target + "."):
                    edges[name].add(target)
    return edges


def package_cycles(src: Path) -> list[list[str]]:
    """Strongly connected components (more than one package) of the package import graph."""
    pkg_edges: dict[str, set[str]] = defaultdict(set)
    for source, targets in import_graph(src).items():
        for target in targets:
            a, b = package_of(source), package_of(target)
            if a != b and b not in ("tritonbisect", "domains"):
                pkg_edges[a].add(b)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(pkg_edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(pkg_edges):
        if v not in index:
            visit(v)
    return sorted(out)


def _str(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def journal_key_lookups(src: Path) -> int:
    count = 0
    for name, path in modules(src).items():
        if package_of(name).split(".")[0] not in JOURNAL_READERS:
            continue
        for node in ast.walk(parsed(path)):
            key = None
            if isinstance(node, ast.Subscript):
                key = _str(node.slice)
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                  and node.func.attr == "get" and node.args):
                key = _str(node.args[0])
            if key in RECORD_KEYS:
                count += 1
    return count


def _params(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.arg]:
    a = fn.args
    params = [*a.posonlyargs, *a.args, *a.kwonlyargs]
    return [p for p in params if p.arg not in ("self", "cls")]


def functions(src: Path):
    for name, path in modules(src).items():
        for node in ast.walk(parsed(path)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield name, node


def any_params(src: Path) -> tuple[int, int]:
    total = ui_pool = 0
    for _name, fn in functions(src):
        for p in _params(fn) + [x for x in (fn.args.vararg, fn.args.kwarg) if x is not None]:
            if p.annotation is not None and ast.unparse(p.annotation) in ("Any", "typing.Any"):
                if p in (fn.args.vararg, fn.args.kwarg):
                    continue  # **kwargs: Any is a mapping of anything on purpose
                total += 1
                if p.arg in ("ui", "pool"):
                    ui_pool += 1
    return total, ui_pool


def many_params(src: Path, at_least: int = 9) -> list[str]:
    return sorted(f"{name}.{fn.name} ({len(_params(fn))})" for name, fn in functions(src)
                  if len(_params(fn)) >= at_least)


def long_modules(src: Path, limit: int = 600) -> list[str]:
    return sorted(f"{n} ({len(p.read_text(encoding='utf-8').splitlines())})" for n, p in modules(src).items()
                  if len(p.read_text(encoding="utf-8").splitlines()) > limit)


def _oracle_compares(tree: ast.AST) -> int:
    hits = 0
    for node in ast.walk(tree):
        consts: list[str] = []
        if isinstance(node, ast.Compare):
            for side in [node.left, *node.comparators]:
                if _str(side) is not None:
                    consts.append(_str(side) or "")
                elif isinstance(side, (ast.Tuple, ast.List, ast.Set)):
                    consts += [s for s in map(_str, side.elts) if s is not None]
            text = ast.unparse(node)
            if any(c in ORACLE_KINDS for c in consts) and re.search(r"oracle|mode|\.kind|\bkind\b", text):
                hits += 1
        elif isinstance(node, (ast.List, ast.Tuple)):
            names = [_str(e) for e in node.elts]
            if sum(1 for n in names if n in ORACLE_KINDS) >= 2 and all(n is not None for n in names):
                hits += 1
    return hits


def oracle_kind_files(src: Path) -> dict[str, int]:
    out = {}
    for name, path in modules(src).items():
        if ".standalone." in name or name.endswith("_template"):
            continue  # the scripts copied into a target environment
        hits = _oracle_compares(parsed(path))
        if hits:
            out[name] = hits
    return out


_RULE_NAMES = {"combine_runs", "combine_cases", "REGRESS_MODES", "TEST_FAILURE_KINDS", "_build_mapping"}


def verdict_rule_files(src: Path) -> list[str]:
    out = []
    for name, path in modules(src).items():
        tree = parsed(path)
        defines = any(isinstance(n, (ast.FunctionDef, ast.Assign)) and (
            getattr(n, "name", None) in _RULE_NAMES
            or any(isinstance(t, ast.Name) and t.id in _RULE_NAMES for t in getattr(n, "targets", []))
        ) for n in ast.walk(tree))
        reads_back = any(isinstance(n, ast.Compare) and any(_str(c) == "flaky" for c in [n.left, *n.comparators])
                         for n in ast.walk(tree))
        if defines or reads_back:
            out.append(name)
    return sorted(out)


def domain_listing_files(src: Path) -> list[str]:
    out = []
    for name, path in modules(src).items():
        if name.startswith("tritonbisect.domains"):
            continue
        text = path.read_text(encoding="utf-8")
        named = {d for d in DOMAINS if re.search(rf"tritonbisect[./]domains[./]{d}\b", text)}
        if len(named) >= 3:
            out.append(name)
    return sorted(out)


def domain_naming_files(src: Path) -> list[str]:
    """Modules outside `domains/` that name a domain package at all (import it or refer to it)."""
    out = []
    for name, path in modules(src).items():
        if name.startswith("tritonbisect.domains"):
            continue
        text = path.read_text(encoding="utf-8")
        if any(re.search(rf"tritonbisect[./]domains[./]{d}\b", text) for d in DOMAINS):
            out.append(name)
    return sorted(out)


def mypy_strict(root: Path) -> int:
    proc = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental"], cwd=root,
                          capture_output=True, text=True)
    found = re.search(r"Found (\d+) errors?", proc.stdout)
    return int(found.group(1)) if found else 0


# the targeted run whose coverage is reported (a lower bound of the whole suite's): the tests
# of the outcomes, the search, the session's parts and a few whole sessions; found by file
# name wherever the tests are laid out
COVERAGE_SET = (
    "test_outcome.py", "test_settings_file.py", "test_case_evidence.py", "test_strategy_cases.py",
    "test_history.py", "test_engine_journal.py", "test_engine_run.py", "test_executor_units.py",
    "test_search.py", "test_bayes.py", "test_tables.py",
)


def coverage(root: Path, tests: list[str]) -> float:
    found = [str(p) for name in tests for p in sorted((root / "tests").rglob(name))]
    tests = found or tests
    data = root / ".coverage-seams"
    env = {**os.environ, "PYTHONPATH": f"{root / 'src'}{os.pathsep}{root}", "COVERAGE_FILE": str(data)}
    report = root / ".coverage-seams.json"
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--no-header",
                    f"--cov={root / 'src' / 'tritonbisect'}", f"--cov-report=json:{report}", *tests],
                   cwd=root, env=env, capture_output=True, text=True)
    try:
        return float(json.loads(report.read_text())["totals"]["percent_covered"])
    finally:
        for p in (data, report):
            p.unlink(missing_ok=True)


def measure(root: Path, *, with_mypy: bool, tests: list[str]) -> dict[str, object]:
    src = root / "src"
    oracle = oracle_kind_files(src)
    verdict = verdict_rule_files(src)
    listing = domain_listing_files(src)
    total_any, ui_pool = any_params(src)
    figures: dict[str, object] = {
        "files: new domain": 3 + len(listing),
        "modules outside domains/ naming a domain": len(domain_naming_files(src)),
        "files: new oracle kind": 1 + len(oracle),
        "files: new verdict rule": 1 + len(verdict),
        "journal string-key lookups": journal_key_lookups(src),
        "Any parameters": total_any,
        "ui/pool: Any parameters": ui_pool,
        "package cycles": len(package_cycles(src)),
        "functions with >= 9 parameters": len(many_params(src)),
        "modules past 600 lines": len(long_modules(src)),
        "lines of Python in src/": sum(len(p.read_text(encoding="utf-8").splitlines()) for p in modules(src).values()),
        "_detail": {
            "domain listings": listing, "domain naming": domain_naming_files(src), "oracle kind compares": oracle, "verdict rules": verdict,
            "cycles": package_cycles(src), "long modules": long_modules(src), "many params": many_params(src),
        },
    }
    if with_mypy:
        figures["mypy --strict errors"] = mypy_strict(root)
    if tests:
        figures["coverage lower bound (%)"] = round(coverage(root, tests), 1)
    return figures


def _rev(root: Path) -> str:
    proc = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return proc.stdout.strip() or root.name


def side_by_side(before: dict[str, object], after: dict[str, object], labels: tuple[str, str]) -> str:
    keys = [k for k in after if not k.startswith("_")]
    rows = [f"| {'figure':40} | {labels[0]:>18} | {labels[1]:>18} |", f"|{'-' * 42}|{'-' * 19}:|{'-' * 19}:|"]
    rows += [f"| {k:40} | {before.get(k, '-')!s:>18} | {after[k]!s:>18} |" for k in keys]
    return "\n".join(rows)


def _detail_lines(detail: dict[str, object]) -> list[str]:
    out = []
    for key in ("cycles", "long modules", "oracle kind compares", "verdict rules", "domain listings"):
        value = detail.get(key)
        if isinstance(value, dict):
            value = [f"{k} ({v})" for k, v in value.items()]
        elif key == "cycles":
            value = [" <-> ".join(c) for c in value or []]
        out.append(f"- {key}: {', '.join(map(str, value or [])) or 'none'}")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", type=Path, default=HERE)
    ap.add_argument("--before", type=Path, help="a checkout to measure too, side by side (the 'before')")
    ap.add_argument("--label", default=None)
    ap.add_argument("--mypy", action="store_true")
    ap.add_argument("--coverage", nargs="*", default=None, metavar="TEST",
                    help="measure coverage over these test files (by name; none given: COVERAGE_SET)")
    ap.add_argument("--detail", action="store_true", help="print which files and functions each figure counts")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    ap.add_argument("--write", action="store_true", help="with --before: write the side-by-side section of RESULTS.md")
    args = ap.parse_args()
    tests = [] if args.coverage is None else (args.coverage or list(COVERAGE_SET))
    figures = measure(args.root.resolve(), with_mypy=args.mypy, tests=tests)
    detail = figures.pop("_detail")
    if args.before is None:
        for key, value in figures.items():
            print(f"{key:36} {value}")
        if args.detail:
            print(json.dumps(detail, indent=1))
        if args.json:
            args.json.write_text(json.dumps({"label": args.label, **figures, "detail": detail}, indent=1))
        return
    before = measure(args.before.resolve(), with_mypy=args.mypy, tests=tests)
    before_detail = before.pop("_detail")
    labels = (f"before ({_rev(args.before)})", f"after ({_rev(args.root)})")
    table = side_by_side(before, figures, labels)
    print(table)
    if args.json:
        args.json.write_text(json.dumps({"before": before, "after": figures}, indent=1))
    if args.write:
        from results_md import write_section

        between = subprocess.run(["git", "-C", str(args.root), "rev-list", "--count", f"{_rev(args.before)}..HEAD"],
                                 capture_output=True, text=True).stdout.strip() or "?"

        body = [
            "`python bench/seams_bench.py --before DIR --mypy --write`: the same syntax-tree counts on two",
            "checkouts (see the script's docstring for what each counts). mypy --strict runs the project's",
            "configuration plus --strict.",
            "",
            table,
            "",
            f"{between} commits lie between the two checkouts, most of them features (the source grew from "
            f"{before['lines of Python in src/']} to {figures['lines of Python in src/']} lines): counts that grow "
            "with the code (string-key lookups, functions with many parameters, mypy --strict errors) grew with it "
            "where the new code was not typed.",
            "",
            f"What the figures count, {labels[0]}:",
            *_detail_lines(before_detail),
            "",
            f"{labels[1]}:",
            *_detail_lines(detail),
        ]
        write_section("Typed seams: before and after", "\n".join(body))


if __name__ == "__main__":
    main()
