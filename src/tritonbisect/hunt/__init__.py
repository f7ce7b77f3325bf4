"""CI regression hunting: `tritonbisect hunt`, a session factory with memory.

`state` is the memory (a JSON file), `targets` the bisectors a hunt can use, `probe` the
night's single steps, `night` the decisions of one night, `outputs` what it leaves behind.
"""
