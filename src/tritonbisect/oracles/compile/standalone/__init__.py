"""Files copied verbatim into compile-oracle folders: standard library only, no tritonbisect
imports, Python 3.8+ syntax (they run on the target environment's interpreter)."""
