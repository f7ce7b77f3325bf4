"""How a commit becomes something testable: recipes, the artifact cache, the target environment."""
