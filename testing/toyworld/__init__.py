"""The toy Triton world: real git repos of a miniature llvm-project, triton and pytorch.

    world = make_world(tmp_path, api_breaks=2)
    world.llvm, world.triton, world.torch    # paths of the repos
    world.truth["bump"], ...                 # the facts tests check results against

Everything builds for real: toy LLVM with cmake + ninja, toy Triton with
`pip wheel --no-build-isolation --no-deps -w OUT <triton>/python` (LLVM_SYSPATH=<prefix>).
See world.py for the shape of the histories and README's truth keys.
"""

from testing.toyworld.apibreaks import BREAKS, MAX_API_BREAKS, ApiBreak
from testing.toyworld.world import LLVM_CMAKE_ARGS, ToyWorld, make_world

__all__ = ["BREAKS", "LLVM_CMAKE_ARGS", "MAX_API_BREAKS", "ApiBreak", "ToyWorld", "make_world"]
