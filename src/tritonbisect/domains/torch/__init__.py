"""PyTorch: its wheel recipe, its bisector, its published nightlies."""
