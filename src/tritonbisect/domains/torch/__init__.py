"""PyTorch: its wheel recipe, its bisector and `tritonbisect torch`, its published nightlies,
its hunt target."""
