"""Where steps run: worker threads on this machine (local) or actors on a Ray cluster."""
