"""Where and how the steps of a session run (`ExecutorSettings`): the executor and its workers,
and what every step is given wherever it runs.

Made by the command layer from --executor, --jobs, --ray-address, --build-resources,
--test-resources, --repo-url, --cache-dir/--cache-url, --sandbox, --env, --pass-env, --timeout and
--repeat; a worker pool takes it whole (`choose.make_pool`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

# what a Ray worker asks for when --build-resources or --test-resources is not given
DEFAULT_RESOURCES: dict[str, float] = {"CPU": 1.0}


@dataclass
class ExecutorSettings:
    kind: str = "local"  # --executor: local (threads here) or ray (actors on a cluster)
    jobs: int = 1  # worker slots, each with its own worktree
    repeat: int = 1  # test runs per step
    timeout: float | None = None  # per test run, in seconds
    env: dict[str, str] = field(default_factory=dict)  # for builds and tests (with --log-limit's)
    # --pass-env: secrets (core/secrets.py) that reach builds and tests all the same; names only
    pass_env: list[str] = field(default_factory=list)
    cache_dir: str | None = None  # the artifact cache: a directory or an s3:// URL; None: <workdir>/cache
    sandbox: bool = False  # builds and tests in builds/sandbox.py's sandbox
    ray_address: str = "auto"
    build_resources: dict[str, float] | None = None  # None: DEFAULT_RESOURCES
    test_resources: dict[str, float] | None = None
    repo_url: str | None = None  # where Ray nodes fetch the repository themselves

    def resources(self) -> tuple[dict[str, float], dict[str, float]]:
        """(build resources, test resources) of a Ray worker, defaults filled in."""
        build = dict(self.build_resources or DEFAULT_RESOURCES)
        test = dict(self.test_resources or DEFAULT_RESOURCES)
        return build, test
