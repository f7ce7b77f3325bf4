"""The explicit tables (recipes, workflows, hunt targets, commands): every entry resolves to
what it says, and a fresh process rebuilding one recipe imports that recipe's domain alone."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from engine_repo import env_for
from tritonbisect.builds.recipe_table import RECIPES
from tritonbisect.core.refs import resolve

# the smallest config each recipe accepts (what a session would store, minus the options)
CONFIGS: dict[str, dict] = {
    "command": {"build": None, "test": {"command": "true"}},
    "triton": {"test": {"command": "true"}},
    "llvm-triton": {"test": {"command": "true"}, "triton_dir": "/nonexistent/triton"},
    "backend-llvm": {"test": {"command": "true"}, "triton_dir": "/nonexistent/triton", "backend": "amd"},
    "torch": {"test": {"command": "true"}},
    "wheel": {"test": {"command": "true"}, "cwd": "/"},
    "revert": {"inner": {"name": "command", "config": {"build": None, "test": {"command": "true"}}},
               "reverts": []},
}

REBUILD = """
import json, sys
from tritonbisect.builds.recipes import recipe_from_config
recipe = recipe_from_config(sys.argv[2], json.loads(sys.argv[3]))
again = recipe_from_config(recipe.name, json.loads(json.dumps(recipe.config())))
domains = sorted({m.split(".")[2] for m in sys.modules
                  if m.startswith("tritonbisect.domains.") and len(m.split(".")) > 2})
with open(sys.argv[1], "w") as out:
    json.dump({"name": recipe.name, "same": again.config() == recipe.config(), "domains": domains}, out)
"""

# the domains each recipe's module stands on (a PyTorch build builds the Triton it pins; an
# LLVM step builds a Triton against it; the LLVM build itself is in builds/)
DOMAINS = {
    "command": ["command"], "triton": ["triton"], "llvm-triton": ["llvm", "triton"],
    "backend-llvm": ["llvm", "triton"],
    "torch": ["torch", "triton"], "wheel": ["wheels"],
    "revert": ["command"],
}


def test_every_recipe_is_tested_here() -> None:
    assert set(CONFIGS) == set(RECIPES) == set(DOMAINS)


@pytest.mark.parametrize("name", sorted(RECIPES))
def test_a_fresh_process_rebuilds_each_recipe_importing_only_its_domain(name: str, tmp_path: Path) -> None:
    """What `resume` and a Ray node do: the recipe is found by the name session.json keeps,
    without the command that created it having been imported."""
    out = tmp_path / "rebuilt.json"
    proc = subprocess.run([sys.executable, "-c", REBUILD, str(out), name, json.dumps(CONFIGS[name])],
                          env=env_for(tmp_path / "home"), capture_output=True, text=True,
                          timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(out.read_text())
    assert got["name"] == name
    assert got["domains"] == DOMAINS[name]
    assert got["same"]  # what it saves rebuilds it again (a resumed session stays resumable)


def test_an_unknown_recipe_is_one_clear_error() -> None:
    from tritonbisect.builds.recipes import recipe_from_config
    from tritonbisect.core.errors import InputError

    with pytest.raises(InputError, match="unknown recipe 'nope'; is this tritonbisect too old"):
        recipe_from_config("nope", {})


def test_a_reference_must_name_a_module_and_an_attribute() -> None:
    assert resolve("tritonbisect.core.refs:resolve") is resolve
    for bad in ("tritonbisect.core.refs", ":resolve", "tritonbisect.core.refs:"):
        with pytest.raises(ValueError, match="is not of the form"):
            resolve(bad)
    with pytest.raises(ModuleNotFoundError):
        resolve("tritonbisect.core.no_such_module:x")
    with pytest.raises(AttributeError):
        resolve("tritonbisect.core.refs:no_such_attr")


def test_every_workflow_resolves_to_its_continuation() -> None:
    from tritonbisect.domains.llvm import descent, pairs
    from tritonbisect.domains.torch import nightly_workflow
    from tritonbisect.session.workflows import WORKFLOWS, continuation

    # the names the commands store in session.json are the table's
    assert {descent.WORKFLOW, pairs.WORKFLOW, nightly_workflow.WORKFLOW} == set(WORKFLOWS)
    assert continuation(descent.WORKFLOW) is descent.continue_after_triton
    assert continuation(pairs.WORKFLOW) is pairs.report_first_bad_pair
    assert continuation(nightly_workflow.WORKFLOW) is nightly_workflow.continue_after_torch_nightlies


def test_every_workflow_preflight_resolves() -> None:
    from tritonbisect.domains.llvm import descent, pairs
    from tritonbisect.session.workflows import PREFLIGHTS, WORKFLOWS, preflight

    assert set(PREFLIGHTS) <= set(WORKFLOWS)
    assert preflight(descent.WORKFLOW) is descent.preflight
    assert preflight(pairs.WORKFLOW)(None, None) is None  # a workflow without one: nothing checked


def test_an_unknown_workflow_is_one_clear_error() -> None:
    from tritonbisect.core.errors import InputError
    from tritonbisect.session.workflows import continuation

    with pytest.raises(InputError, match="session uses unknown workflow 'nope'"):
        continuation("nope")


def test_every_hunt_target_resolves_and_takes_only_options_of_the_hunt() -> None:
    from tritonbisect.commands.hunt import hunt_cmd
    from tritonbisect.hunt.target_table import HUNT_TARGETS, hunt_targets
    from tritonbisect.hunt.targets import TargetFactory

    factories = hunt_targets()
    assert len(factories) == len(HUNT_TARGETS)
    assert all(isinstance(f, TargetFactory) for f in factories)
    assert [f.kind for f in factories] == ["torch", "triton", "command"]
    hunt_options = {p.name for p in hunt_cmd.params}
    for factory in factories:
        assert factory.options <= hunt_options, factory.kind
    # the last one is the fallback: a hunt always has a bisector
    assert factories[-1].chooses({})
    assert [f.kind for f in factories if f.chooses({"triton_dir": "t", "torch_dir": "p"})][0] == "torch"
