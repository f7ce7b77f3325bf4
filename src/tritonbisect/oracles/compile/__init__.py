"""The compile oracle: cross-compile a traced kernel for its traced GPU with no GPU at hand.

    spec.py        trace -> version-neutral compile job (target, options, parameters)
    generate.py    write the oracle folder; the bisect TestSpec of `--oracle compile`
    standalone/    copied verbatim into each oracle folder (standard library only):
      compile_repro.py  the oracle's command line       tb_runner.py   compile in a child, classify
      tb_child.py       the child process               tb_bridge.py   one job -> this Triton's API
      tb_codegen.py     codegen statistics and their comparison with thresholds
      tb_limits.py      what the target's driver would refuse to launch (shared memory, threads...)

`standalone.tb_runner.compile_in_child(job, ...)` and `standalone.tb_codegen` are the reusable
API (an IR file is a job too: {"what": {"kind": "ir", "file": "k.ttgir"}, ...}).
"""
