"""CI regression hunting: `tritonbisect hunt`, a session factory with memory.

`memory` is the memory (a JSON file), `targets` what a hunt target is and `target_table`
the bisectors a hunt can use (each in its domain's `hunt_target.py`), `night_steps` the
night's single steps, `night` the decisions of one night, `outputs` what it leaves behind.
"""
