"""The user's own build and test commands, as a recipe (`tritonbisect run`)."""
