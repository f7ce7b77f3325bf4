"""How a phase names its commits to the user: a command's labels (`wheels`: the versions of its
ladder) or short shas, and each commit's subject line."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Mapping, Sequence
from typing import Any

_SHA = re.compile(r"\b[0-9a-f]{7,40}\b")


def name_commits(text: str | None, labels: Mapping[str, str]) -> str:
    """`text` with every labelled commit in it (whole or abbreviated) written as its label: a
    reason a step wrote (a timing's reference) says `3.4.0`, not the ladder's sha."""
    if not labels:
        return text or ""

    def named(m: re.Match[str]) -> str:
        word = m.group(0)
        return next((label for sha, label in labels.items() if sha.startswith(word)), word)

    return _SHA.sub(named, text or "")


class CommitNames:
    """Names and subjects of one phase's commits; subjects are read from git when first asked."""

    def __init__(self, history: Any, labels: Mapping[str, str], commits: Sequence[str]) -> None:
        self.history = history
        self.labels = dict(labels)
        self._commits = list(commits)  # whose subjects one git call reads, on first use
        self._subjects: dict[str, str] = {}
        self._loaded = False

    def named(self, commit: str) -> str:
        return self.labels.get(commit) or commit[:12]

    def parent(self, commit: str) -> str:
        """"its parent <sha>", or for versions "the version before it, 3.3.0"."""
        if self.labels:
            return f"the version before it, {self.named(commit)},"
        return f"its parent {self.named(commit)}"

    @property
    def noun(self) -> str:
        return "version" if self.labels else "commit"

    def subject(self, commit: str) -> str:
        if not self._loaded:
            # one git call for every commit of the range, instead of one per step
            self._loaded = True
            with contextlib.suppress(Exception):  # a subject is decoration only
                self._subjects.update(self.history.subjects(self._commits))
        if commit not in self._subjects:
            try:
                self._subjects[commit] = self.history.commit_info(commit).subject
            except Exception:  # noqa: BLE001 - a subject is decoration only
                self._subjects[commit] = ""
        return self._subjects[commit]
