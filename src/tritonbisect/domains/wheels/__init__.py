"""Published wheels: `tritonbisect wheels` bisects released and nightly versions with installs
only; the nightlies-first phase of `triton|torch --wheel-index`."""
