"""Every recipe, by the name a session stores, as a reference to what rebuilds it from its config.

`recipe_name` in session.json is a key of RECIPES, so a name here never changes. A value is
"module:attr" of a callable `(config) -> Recipe`, imported only when that recipe is rebuilt:
`tritonbisect step` and a Ray node rebuilding one recipe import that recipe's domain alone,
and this layer names the domains without importing them. Adding a recipe is one line here.
"""

from __future__ import annotations

RECIPES: dict[str, str] = {
    "command": "tritonbisect.domains.command.recipe:CommandRecipe.from_config",
    "triton": "tritonbisect.domains.triton.recipe:TritonRecipe",
    "llvm-triton": "tritonbisect.domains.llvm.triton_recipe:LLVMTritonRecipe",
    # a backend's own LLVM (ROCm's for AMD) through one Triton commit
    "backend-llvm": "tritonbisect.domains.llvm.backend_recipe:BackendLLVMRecipe",
    "torch": "tritonbisect.domains.torch.recipe:TorchRecipe",
    "wheel": "tritonbisect.domains.wheels.recipe:WheelRecipe",
    # any recipe with earlier culprits reverted (--verify-revert)
    "revert": "tritonbisect.builds.revert_recipe:RevertRecipe.from_config",
}
