"""Test support that is not installed: the toy worlds (miniature llvm-project, triton and pytorch
repositories) used by the tests and the benchmarks."""
