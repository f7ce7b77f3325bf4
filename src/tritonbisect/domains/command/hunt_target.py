"""What `hunt --repo DIR --build CMD` tests: the user's own build and test commands, as `run`
bisects them (the hunt's fallback bisector)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from tritonbisect.hunt.targets import GitTarget, TargetFactory
from tritonbisect.session.phases import PhaseSpec
from tritonbisect.session.settings import BisectSettings


class CommandTarget(GitTarget):
    """`--repo DIR --build CMD`: the user's own build and test commands, like `run`."""

    kind = "command"
    command = "run"

    def __init__(self, repo: Path, build: str | None, test: dict, *, first_parent: bool = False) -> None:
        super().__init__(repo, first_parent=first_parent)
        self.build = build
        self.test = test

    def phase(self, good: str, bad: str) -> PhaseSpec:
        from tritonbisect.builds.recipes import TestSpec
        from tritonbisect.domains.command.recipe import CommandRecipe

        recipe = CommandRecipe(self.build, TestSpec.from_dict(self.test))
        return PhaseSpec(
            name="main", repo=self.repo, good=good, bad=bad, recipe_name=recipe.name,
            recipe_config=recipe.config(), first_parent=self.first_parent,
        )


def _create(kw: dict[str, Any], settings: BisectSettings) -> CommandTarget:
    return CommandTarget(kw.get("repo") or Path("."), kw.get("build_cmd"), {}, first_parent=settings.search.first_parent)


_OPTIONS = (
    click.option("--repo", type=click.Path(file_okay=False, path_type=Path), help="Command bisector: the repository to hunt in, built with --build (default: the current directory)."),
    click.option("--build", "build_cmd", metavar="CMD", help="Command bisector: build command (bash), run in each commit's checkout."),
)

# it takes any options: hunt/target_table.py tries it last
HUNT_TARGET = TargetFactory("command", lambda kw: True, frozenset({"repo", "build_cmd"}), _create, _OPTIONS)
