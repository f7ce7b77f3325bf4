"""Click commands, one module per area; `tritonbisect.cli` lists them in its COMMANDS table
(name -> "module:attr" and the one-line help) and imports a module only when its command runs.

Each module also exposes `COMMANDS: list[click.Command]`; tests/test_cli_lazy.py checks that
every one of them is in the table. Keep heavy imports (GitPython, rich, the domain packages)
inside the command functions, not at module top level.
"""
