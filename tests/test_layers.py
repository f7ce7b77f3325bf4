"""Imports point down: search < core < builds < executors < session < reports < domains <
hunt < commands < cli. A domain's `command.py` sits with the commands and its
`hunt_target.py` with the hunt; the rest of a domain package is a domain module. Lower
layers reach the domains only through the tables' "module:attr" strings."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "tritonbisect"
ORDER = ["search", "core", "builds", "executors", "session", "reports", "domains", "hunt", "commands", "cli"]
# the role modules of a domain package and the layer each belongs to
ROLES = {"command": "commands", "hunt_target": "hunt"}


def layer(module: str) -> int | None:
    """The layer of a `tritonbisect.*` module; None for packages outside the order."""
    parts = module.split(".")
    if len(parts) < 2 or parts[1] not in ORDER:
        return None
    if parts[1] == "domains" and len(parts) >= 4 and parts[3] in ROLES:
        return ORDER.index(ROLES[parts[3]])
    return ORDER.index(parts[1])


def imports(path: Path) -> list[tuple[str, int]]:
    """Every absolute `tritonbisect.*` import of a file (at any depth), with its line."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            # `from tritonbisect.domains.triton import command` imports the module named last
            out += [(n, node.lineno) for n in names if n.startswith("tritonbisect.")]
        elif isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names if a.name.startswith("tritonbisect.")]
    return out


def module_of(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def test_every_import_points_down() -> None:
    upward = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = module_of(path)
        mine = layer(module)
        if mine is None:
            continue
        for name, line in imports(path):
            theirs = layer(name)
            if theirs is not None and theirs > mine:
                upward.append(f"{path.relative_to(PACKAGE)}:{line} {module} -> {name}")
    assert upward == []


def test_the_rule_sees_the_role_modules() -> None:
    assert layer("tritonbisect.domains.triton.command") == ORDER.index("commands")
    assert layer("tritonbisect.domains.torch.hunt_target") == ORDER.index("hunt")
    assert layer("tritonbisect.domains.triton.recipe") == ORDER.index("domains")
    assert layer("tritonbisect.domains.triton") == ORDER.index("domains")
    assert layer("tritonbisect.oracles.replay") is None
    # and the tree has them: one command module per domain, a hunt target where one is hunted
    domains = sorted(p.name for p in (PACKAGE / "domains").iterdir() if (p / "__init__.py").is_file())
    assert domains == ["command", "llvm", "torch", "triton", "wheels"]
    assert all((PACKAGE / "domains" / d / "command.py").is_file() for d in domains)
    assert sorted(d for d in domains if (PACKAGE / "domains" / d / "hunt_target.py").is_file()) == [
        "command", "torch", "triton"]
