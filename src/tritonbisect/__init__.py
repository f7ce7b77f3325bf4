"""tritonbisect: find the commit that broke a Triton kernel with as few builds as possible."""

__version__ = "0.1.0"
