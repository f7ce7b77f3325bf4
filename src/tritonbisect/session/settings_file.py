"""The settings as session.json keeps them: one flat object, each setting under its name in
FLAT_LAYOUT (the layout session.json has always had, and the JSON report shows).

A key this version does not know is ignored and a missing one takes its default, so older
sessions, which lack the settings added since, still load; "json", which older sessions
saved, is no setting (only the command's output) and is dropped.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

from tritonbisect.core.errors import InputError
from tritonbisect.session.settings import BisectSettings

# The flat name of every setting, in the order session.json has them: name -> (the part of
# BisectSettings, dotted when nested, "" for BisectSettings itself; the field there).
FLAT_LAYOUT: dict[str, tuple[str, str]] = {
    "jobs": ("executor", "jobs"),
    "repeat": ("executor", "repeat"),
    "timeout": ("executor", "timeout"),
    "env": ("executor", "env"),
    "on_build_failure": ("verdicts", "on_build_failure"),
    "regress": ("verdicts", "regress"),
    "first_parent": ("search", "first_parent"),
    "workdir": ("", "workdir"),
    "test": ("test", "command"),
    "repro": ("test", "repro"),
    "kernel": ("test", "kernel"),
    "launch_id": ("test", "launch_id"),
    "oracle": ("test", "oracle"),
    "check": ("test", "check"),
    "codegen_thresholds": ("test", "codegen_thresholds"),
    "compile_target": ("test", "compile_target"),
    "ir_from": ("test", "ir_from"),
    "narrow": ("follow_ups", "narrow"),
    "reduce": ("follow_ups.reduce", "enabled"),
    "reduce_levels": ("follow_ups.reduce", "levels"),
    "reduce_jobs": ("follow_ups.reduce", "jobs"),
    "reduce_timeout": ("follow_ups.reduce", "timeout"),
    "executor": ("executor", "kind"),
    "ray_address": ("executor", "ray_address"),
    "build_resources": ("executor", "build_resources"),
    "test_resources": ("executor", "test_resources"),
    "cache_dir": ("executor", "cache_dir"),
    "repo_url": ("executor", "repo_url"),
    "flaky": ("search", "flaky"),
    "flake_rate": ("search", "flake_rate"),
    "confidence": ("search", "confidence"),
    "max_tests": ("search", "max_tests"),
    "manual": ("test", "manual"),
    "prefer_pass": ("hint", "prefer_pass"),
    "prefer_files": ("hint", "prefer_files"),
    "threshold": ("perf", "threshold"),
    "significance": ("perf", "significance"),
    "max_samples": ("perf", "max_samples"),
    "higher_is_better": ("perf", "higher_is_better"),
    "verify_revert": ("follow_ups", "verify_revert"),
    "sandbox": ("executor", "sandbox"),
}

T = TypeVar("T")


def read_settings(data: Mapping[str, Any], where: Path) -> BisectSettings:
    """The settings of the session.json `data` (read from `where`)."""
    given = data.get("settings") or {}
    if not isinstance(given, Mapping):
        raise InputError(f"session file {where} is corrupt: its settings are not an object")
    nested: dict[str, Any] = {}
    for key, (part, name) in FLAT_LAYOUT.items():
        if key in given:
            node = nested
            for step in part.split(".") if part else ():
                node = node.setdefault(step, {})
            node[name] = given[key]
    return _made(BisectSettings, nested)


def flat_settings(settings: BisectSettings) -> dict[str, Any]:
    """The settings as session.json and the JSON report have them."""
    record = dataclasses.asdict(settings)
    record["workdir"] = str(settings.workdir)
    out: dict[str, Any] = {}
    for key, (part, name) in FLAT_LAYOUT.items():
        node = record
        for step in part.split(".") if part else ():
            node = node[step]
        out[key] = node[name]
    return out


def _made(cls: type[T], data: Mapping[str, Any]) -> T:
    """An instance of the dataclass `cls` from `data`: unknown keys are ignored, a missing key
    (or a null where the field has a value by default, as older files may hold) takes the
    field's default, and a nested dataclass or a path is rebuilt from its JSON form."""
    values: dict[str, Any] = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if f.name not in data:
            continue
        value = data[f.name]
        default = _default_of(f)
        if value is None and default is not None:
            continue
        if dataclasses.is_dataclass(default) and isinstance(value, Mapping):
            value = _made(type(default), value)
        elif isinstance(default, Path):
            value = Path(value)
        values[f.name] = value
    return cls(**values)


def _default_of(f: dataclasses.Field[Any]) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return None
