"""The user's own build and test commands: the "command" recipe, `tritonbisect run`, and the
hunt's fallback target."""
