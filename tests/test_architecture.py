"""The import directions docs/architecture.md states, checked against the code.

The layers are read from the page itself (the fenced blocks after `<!-- layers -->` and
`<!-- domain-roles -->`), so the page and the code cannot drift apart: every import of ours,
at module level or inside a function, under TYPE_CHECKING or not, must point to the module's
own layer or a lower one, no two modules may import each other, and no packages either.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "tritonbisect"
PAGE = ROOT / "docs" / "architecture.md"


def _block(marker: str) -> list[list[str]]:
    text = PAGE.read_text(encoding="utf-8")
    block = re.search(rf"<!-- {marker} -->\s*```text\n(.*?)```", text, re.S)
    assert block, f"{PAGE} has no ```text block after <!-- {marker} -->"
    return [line.split() for line in block.group(1).splitlines() if line.strip()]


def stated_layers() -> list[str]:
    """The top-level modules and packages of tritonbisect, bottom layer first."""
    return [words[0] for words in _block("layers")]


def stated_roles() -> dict[str, str]:
    """The role modules of a domain package (domains/<name>/<role>.py) and their layer."""
    return {words[0]: words[1] for words in _block("domain-roles")}


def modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def imports_of(path: Path, known: dict[str, Path]) -> set[str]:
    """The modules of ours that `path` imports (a name imported from a package counts as its
    submodule when one exists)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [f"{node.module}.{alias.name}" for alias in node.names]
            names = [n if n in known else node.module for n in names]
        found.update(n for n in names if n in known)
    return found


def layer_of(module: str, roles: dict[str, str] | None = None) -> str:
    parts = module.split(".")
    if roles and len(parts) >= 4 and parts[1] == "domains" and parts[3] in roles:
        return roles[parts[3]]
    return parts[1] if len(parts) > 1 else "tritonbisect"


def graph() -> dict[str, set[str]]:
    known = modules()
    edges: dict[str, set[str]] = defaultdict(set)
    for name, path in known.items():
        for target in imports_of(path, known):
            # a package's own submodules are below it; a module's package __init__ is not an edge
            if target != name and not name.startswith(target + ".") and target != "tritonbisect":
                edges[name].add(target)
    return edges


def test_every_package_has_a_stated_layer() -> None:
    layers = stated_layers()
    actual = {layer_of(m) for m in modules()} - {"tritonbisect"}
    missing = sorted(actual - set(layers))
    stale = sorted(set(layers) - actual)
    assert not missing, f"packages missing from docs/architecture.md's layers: {missing}"
    assert not stale, f"docs/architecture.md names layers that do not exist: {stale}"


def test_imports_point_down() -> None:
    rank = {name: i for i, name in enumerate(stated_layers())}
    roles = stated_roles()
    upward = []
    for source, targets in sorted(graph().items()):
        for target in sorted(targets):
            if rank[layer_of(target, roles)] > rank[layer_of(source, roles)]:
                upward.append(f"{source} -> {target}")
    assert not upward, "imports pointing up the layers:\n" + "\n".join(upward)


def test_no_two_modules_import_each_other() -> None:
    edges = graph()
    pairs = sorted({tuple(sorted((a, b))) for a, targets in edges.items() for b in targets if a in edges.get(b, ())})
    assert not pairs, f"modules that import each other: {pairs}"


def package_of(module: str) -> str:
    """The package a module is in: the top-level one, or for a domain its own
    (`domains.<name>`: the domains are packages side by side, not one layer's modules)."""
    parts = module.split(".")
    if len(parts) >= 3 and parts[1] == "domains":
        return ".".join(parts[1:3])
    return parts[1] if len(parts) > 1 else parts[0]


def package_graph() -> dict[str, set[str]]:
    edges: dict[str, set[str]] = defaultdict(set)
    for source, targets in graph().items():
        for target in targets:
            a, b = package_of(source), package_of(target)
            if a != b and b not in ("tritonbisect", "domains"):
                edges[a].add(b)
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_no_package_cycle() -> None:
    """Packages import each other one way only, a domain package included (the LLVM domain may
    use the Triton one, not also the other way round); the explicit tables name what sits
    above (core/refs.py)."""
    found = cycles(package_graph())
    detail = [f"{a} -> {b}: " + ", ".join(sorted(f"{s} -> {t}" for s, ts in graph().items() for t in ts
                                                 if package_of(s) == a and package_of(t) == b))
              for component in found for a in component for b in component if b in package_graph().get(a, ())]
    assert not found, "packages that import each other (through these imports):\n" + "\n".join(detail)


def test_the_cycle_check_sees_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_module_names_are_unique_outside_the_domain_packages() -> None:
    """Two modules of one name hold different things and confuse every search; only the domain
    packages repeat role names on purpose (recipe.py, bisector.py, ...)."""
    seen: dict[str, list[str]] = defaultdict(list)
    for name in modules():
        leaf = name.rsplit(".", 1)[-1]
        if name.startswith("tritonbisect.domains.") or leaf in ("__main__",) or name.count(".") == 0:
            continue
        if (PACKAGE.joinpath(*name.split(".")[1:]) / "__init__.py").exists():
            continue  # a package, not a module
        seen[leaf].append(name)
    dupes = {leaf: names for leaf, names in seen.items() if len(names) > 1}
    assert not dupes, f"module names used twice: {dupes}"


def test_the_checker_sees_an_upward_import(tmp_path: Path) -> None:
    """The graph is built from real source: a function-level import counts too."""
    source = tmp_path / "m.py"
    source.write_text("def f():\n    from tritonbisect.session import journal\n", encoding="utf-8")
    known = {"tritonbisect.session": Path(), "tritonbisect.session.journal": Path()}
    assert imports_of(source, known) == {"tritonbisect.session.journal"}
