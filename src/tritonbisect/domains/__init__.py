"""The domains a bisect can walk: Triton, LLVM, PyTorch, published wheels, and the user's own commands.

Each domain is one package with the same roles:

    recipe.py       how a commit becomes something testable (builds.recipes.Recipe)
    bisector.py     the phase a bisect of the domain runs: repository, range, recipe config
    command.py      its `tritonbisect` command(s) and their domain-specific options
    hunt_target.py  what `tritonbisect hunt` tests when it hunts in this domain (where it can)

and modules of its own (the LLVM descent, Triton's LLVM pin, the nightlies...). Nothing
registers itself by being imported: the explicit tables name these modules by
"module:attr" strings, resolved only when needed, and tests resolve every entry:

    builds/recipe_table.py   recipe name (as session.json keeps it) -> what rebuilds it
    session/workflows.py     workflow name -> the continuation run after each phase, and
                             the preflight check run before its session is made
    hunt/target_table.py     the hunt's bisectors, in the order it tries them
    cli/table.py             command name -> its click command, and its one-line help

A domain module may import builds, executors, session, reports and options (the shared
command-line options and a session's start); `command.py` belongs with the commands and
`hunt_target.py` with the hunt (hunt.targets, bringing the bisector's options to `hunt`).
Nothing below a domain imports it, and the domains import each other one way only:
wheels <- triton <- llvm, torch (the LLVM build, the wheel-version reader and the test in a
target environment are in builds/). docs/architecture.md states the layers,
tests/test_architecture.py checks them.
"""
