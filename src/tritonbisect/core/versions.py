"""The versions a session runs with (the tool, Python, git, the platform): recorded when a
session is created, so that its report says what it ran on."""

from __future__ import annotations

import platform
import subprocess


def environment() -> dict[str, str]:
    """The versions a session runs with (recorded when it is created)."""
    from tritonbisect import __version__

    try:
        git = subprocess.run(["git", "--version"], capture_output=True, text=True, timeout=10,
                             check=False).stdout.strip().removeprefix("git version ")
    except (OSError, subprocess.SubprocessError):
        git = "not found"
    return {
        "tritonbisect": __version__,
        "python": platform.python_version(),
        "git": git or "?",
        "platform": platform.platform(),
    }
