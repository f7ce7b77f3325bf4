"""Click commands, one module per area, and what every bisecting command shares (options.py,
launch.py, engine.py's `execute`). A domain's own commands live with it
(`domains/<name>/command.py`). `tritonbisect.cli` lists them all in its COMMANDS table (name
-> "module:attr" and the one-line help) and imports a module only when its command runs.

Each command module (here and in the domains) also exposes `COMMANDS: list[click.Command]`;
tests/test_cli_lazy.py checks that every one of them is in the table. Keep heavy imports
(GitPython, rich, the bisectors and recipes) inside the command functions, not at module top
level.
"""
