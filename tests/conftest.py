"""Session-wide settings of the test run."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator

import pytest


@pytest.fixture(scope="session", autouse=True)
def _uv_cache_of_this_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """uv's cache, for the installs the tool makes in tests, lives as long as the run.

    uv unpacks a wheel given by path once per path, and every test's workdir is a new path:
    in the machine's own uv cache the release wheels the tests install piled up, about 9 GB a
    run. The release venvs of real_triton.py keep a cache of their own that lasts (their files
    are hard links into it)."""
    if os.environ.get("UV_CACHE_DIR"):  # chosen by whoever runs the tests
        yield
        return
    cache = tmp_path_factory.mktemp("uv-cache")
    os.environ["UV_CACHE_DIR"] = str(cache)
    try:
        yield
    finally:
        os.environ.pop("UV_CACHE_DIR", None)
        shutil.rmtree(cache, ignore_errors=True)
