"""The settings as session.json keeps them: the current layout, the older one it still reads,
and the refusal of a newer one.

Format 2 (SCHEMA): session.json says `"schema": 2`, and its "settings" object has one object
per part of BisectSettings (session/settings.py): "workdir", "executor", "verdicts", "perf",
"test", "search", "hint" and "follow_ups" (whose "reduce" is an object too).

Format 1 (no "schema"; every session written before format 2): "settings" is one flat
object of the fields the settings had then (FLAT_LAYOUT says where each one went), with a
"json" key that is no setting and is dropped. Older sessions of format 1 lack the keys added
since, which take their defaults.

In both, a key this version does not know is ignored and a missing one takes its default, so
a field added later needs no new format: SCHEMA goes up only when a field moves, is renamed
or changes its meaning. A file of a format newer than SCHEMA is refused in one line, since
reading it as this version knows it could run the wrong bisect.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

from tritonbisect.core.errors import InputError
from tritonbisect.core.secrets import hide_env, redact_env, restored
from tritonbisect.core.untrusted import json_fits
from tritonbisect.session.settings import BisectSettings

SCHEMA = 2
SCHEMA_KEY = "schema"

# The flat name of every setting: format 1's keys, in the order it wrote them, and the keys of
# the JSON report's "settings". Name -> (the part of BisectSettings, dotted when nested, "" for
# BisectSettings itself; the field there). A field added later gets a name here too.
FLAT_LAYOUT: dict[str, tuple[str, str]] = {
    "jobs": ("executor", "jobs"),
    "repeat": ("executor", "repeat"),
    "timeout": ("executor", "timeout"),
    "env": ("executor", "env"),
    "on_build_failure": ("verdicts", "on_build_failure"),
    "infra_patterns": ("verdicts", "infra_patterns"),
    "builtin_infra_patterns": ("verdicts", "builtin_infra_patterns"),
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
    "perf_design": ("perf", "design"),
    "verify_samples": ("perf", "verify_samples"),
    "verify_revert": ("follow_ups", "verify_revert"),
    "sandbox": ("executor", "sandbox"),
    "pass_env": ("executor", "pass_env"),
    "workaround": ("follow_ups", "workaround"),
    "compile_clock": ("test", "compile_clock"),
}

T = TypeVar("T")


def settings_record(settings: BisectSettings) -> dict[str, Any]:
    """The "settings" object of a format-2 session.json: a secret's --env value is not written
    (****, taken again from the environment on resume), nor a URL's password."""
    data = dataclasses.asdict(settings)
    data["workdir"] = str(settings.workdir)
    data["executor"]["env"] = redact_env(settings.executor.env)
    return data


def read_settings(data: Mapping[str, Any], where: Path) -> BisectSettings:
    """The settings of the session.json `data` (read from `where`), of any format up to
    SCHEMA; InputError for a newer one, or one that is not a format at all."""
    schema = data.get(SCHEMA_KEY, 1)
    if not isinstance(schema, int) or isinstance(schema, bool) or schema < 1:
        raise InputError(f"session file {where} is corrupt: its {SCHEMA_KEY} is {schema!r}")
    if schema > SCHEMA:
        raise InputError(
            f"session file {where} has format {schema}, and this tritonbisect reads formats up to "
            f"{SCHEMA}: resume it with the newer tritonbisect that wrote it"
        )
    given = data.get("settings") or {}
    if not isinstance(given, Mapping):
        raise InputError(f"session file {where} is corrupt: its settings are not an object")
    try:
        settings = _made(BisectSettings, given if schema == SCHEMA else nested_of_flat(given))
    except ValueError as exc:
        raise InputError(f"session file {where} is corrupt: {exc}") from None
    settings.executor.env = restored(settings.executor.env)
    hide_env(settings.executor.env)
    return settings


def nested_of_flat(flat: Mapping[str, Any]) -> dict[str, Any]:
    """Format 1's flat settings in format 2's layout (keys it does not know are dropped)."""
    nested: dict[str, Any] = {}
    for key, (part, name) in FLAT_LAYOUT.items():
        if key in flat:
            node = nested
            for step in part.split(".") if part else ():
                node = node.setdefault(step, {})
            node[name] = flat[key]
    return nested


def flat_settings(settings: BisectSettings) -> dict[str, Any]:
    """The settings in format 1's flat layout (without "json"): the shape the JSON report has
    always shown."""
    record = settings_record(settings)
    out: dict[str, Any] = {}
    for key, (part, name) in FLAT_LAYOUT.items():
        node = record
        for step in part.split(".") if part else ():
            node = node[step]
        out[key] = node[name]
    return out


def _made(cls: type[T], data: Mapping[str, Any], where: str = "") -> T:
    """An instance of the dataclass `cls` from `data`: unknown keys are ignored, a missing key
    (or a null where the field has a value by default, as older files may hold) takes the
    field's default, and a nested dataclass or a path is rebuilt from its JSON form. A value
    of another type than the field's is a ValueError naming it (a file edited by hand, or by
    someone else, must not end in a traceback wherever the setting is used)."""
    if not isinstance(data, Mapping):
        raise ValueError(f"its settings{' ' + where.rstrip('.') if where else ''} are not an object")
    hints = typing.get_type_hints(cls)
    values: dict[str, Any] = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if f.name not in data:
            continue
        value = data[f.name]
        default = _default_of(f)
        if value is None and default is not None:
            continue
        if dataclasses.is_dataclass(default):
            value = _made(type(default), value, f"{where}{f.name}.")
        elif not json_fits(value, hints[f.name]):
            raise ValueError(f"its setting {where}{f.name} is {type(value).__name__} {str(value)[:40]!r}")
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
