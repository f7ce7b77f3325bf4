"""Click commands, one module per area; `tritonbisect.cli` assembles them.

Each module exposes `COMMANDS: list[click.Command]`.
"""
