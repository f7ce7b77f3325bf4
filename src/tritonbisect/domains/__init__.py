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
    session/workflows.py     workflow name -> the continuation run after each phase
    hunt/target_table.py     the hunt's bisectors, in the order it tries them
    cli/table.py             command name -> its click command, and its one-line help

A domain module may import builds, executors, session and reports; `command.py` belongs
with the commands (it may import options.bisect_options and options.launch) and `hunt_target.py`
with the hunt (hunt.targets); nothing below a domain imports it (docs/architecture.md states
the layers, tests/test_architecture.py checks them).
"""
