"""`--help` by task: commands and options in sections, the essentials first, and old option
spellings kept working without being shown.

Click's own help machinery is used (no rich-click or cloup): the root lists its commands
from `cli.table.COMMANDS` without importing them (a library that renders sections asks each
command object for its help, which would import every command module on `--help`), and the
sections come from the tables below, keyed by parameter name, so the command modules keep
plain `@click.option` declarations and one option has the same section in every command.

    tritonbisect --help                 # COMMAND_SECTIONS
    tritonbisect run --help             # OPTION_SECTIONS, applied by `sectioned(command)`
    click.option("--perf-threshold", "--threshold", "threshold", **hidden_alias("--threshold"))
"""

from __future__ import annotations

import click

from tritonbisect.options.alias import AliasOption as AliasOption
from tritonbisect.options.alias import hidden_alias as hidden_alias

# `tritonbisect --help`: the commands, by task (every command of cli.table.COMMANDS is in one)
COMMAND_SECTIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Bisect", ("run", "triton", "wheels", "torch", "llvm", "pairs")),
    ("Follow and correct a session", ("status", "resume", "report", "mark", "undo", "log", "replay")),
    ("Traces and oracles", ("trace", "info", "repro", "narrow", "reduce", "workaround")),
    ("CI and git bisect", ("hunt", "step")),
    ("Set-up and upkeep", ("demo", "cache", "clean")),
)

# a command's `--help`: its options by task, in this order; a parameter not named here goes
# to "Other options", and a command with few options gets one plain "Options" section
OPTION_SECTIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("What to work on", (
        "state_path", "repo", "triton_dir", "torch_dir", "llvm_dir", "amd_llvm_dir", "nvidia_llvm_dir", "good", "bad", "good_llvm", "bad_llvm",
        "compat_map", "triton_commit", "no_descend_llvm", "package", "bump",
        "llvm_commit", "fix_commit", "csv_path")),
    ("Build and test", ("build_cmd", "test", "test_cmd", "artifact", "use", "jobs", "timeout", "build_timeout", "env",
                        "pass_env", "sandbox", "max_candidates")),
    ("Test from a trace", (
        "repro", "kernel", "launch_id", "oracle", "ir_from", "check", "codegen_thresholds",
        "compile_target", "narrow", "workaround_after", "line", "mode", "from_", "ir_file", "target", "launches", "kernels",
        "max_blob_launches", "outputs_after")),
    ("Verdicts and flaky tests", (
        "regress", "on_build_failure", "infra_patterns", "no_infra_patterns", "repeat", "first_parent", "manual",
        "flaky", "flake_rate", "confidence", "max_tests")),
    ("Where to look, and checking the answer", (
        "prefer_pass", "prefer_files", "verify_revert", "reduce_after", "reduce_level", "reduce_jobs",
        "reduce_timeout", "session_id", "level_text")),
    ("Performance (--regress perf, compile-time)", (
        "threshold", "perf_design", "significance", "max_samples", "verify_samples", "higher_is_better",
        "compile_clock")),
    ("Published builds", (
        "wheel_index", "wheels_mode", "wheel_package", "wheel_feed", "feed", "index_urls", "find_links", "pre",
        "installer")),
    ("Target environment and builds", (
        "python", "venv", "good_python", "bad_python", "fresh_interpreters", "device", "debug", "max_jobs",
        "llvm_assertions", "llvm_build_type", "compiler", "triton_build_type", "clang_lld", "llvm_targets",
        "backends", "backend_llvm")),
    ("One night of hunting", ("confirm", "summary", "issue_body", "github_output")),
    ("The fixer (compat-builder)", (
        "branch", "ai", "ai_model", "max_attempts", "ai_timeout", "smoke", "build",
        "unsandboxed_builds")),
    ("Ray cluster (--executor ray)", ("executor", "ray_address", "build_resources", "test_resources", "repo_url", "cache_dir", "cache_url")),
    ("Output and state", ("out", "out_dir", "json_out", "as_json", "workdir", "log_limit")),
)
OTHER = "Other options"
# at most this many options: one plain section (sections would only add headings)
FEW_OPTIONS = 8
_SECTION_OF = {name: title for title, names in OPTION_SECTIONS for name in names}
_ORDER = {name: i for _, names in OPTION_SECTIONS for i, name in enumerate(names)}


def option_sections(command: click.Command, ctx: click.Context) -> list[tuple[str, list[click.Option]]]:
    """The command's visible options grouped as `--help` shows them, in order."""
    params = [p for p in command.get_params(ctx) if isinstance(p, click.Option) and not p.hidden]
    named = [p for p in params if p.name in _SECTION_OF]
    if len(params) <= FEW_OPTIONS or len({_SECTION_OF[p.name] for p in named}) <= 1:
        return [("Options", params)] if params else []
    out: list[tuple[str, list[click.Option]]] = []
    for title, _ in OPTION_SECTIONS:
        members = sorted((p for p in named if _SECTION_OF[p.name] == title),
                         key=lambda p: _ORDER[p.name])
        if members:
            out.append((title, members))
    rest = [p for p in params if p.name not in _SECTION_OF]
    helper = command.get_help_option(ctx)
    if out and rest and all(p is helper for p in rest):
        out[-1][1].extend(rest)  # -h/--help alone is no section of its own
    elif rest:
        out.append((OTHER, rest))
    return out


class SectionedHelp(click.Command):
    """Mixed into a command's class by `sectioned`: options listed by OPTION_SECTIONS."""

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        for title, params in option_sections(self, ctx):
            rows = [rec for p in params if (rec := p.get_help_record(ctx)) is not None]
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)
        if isinstance(self, click.Group):
            self.format_commands(ctx, formatter)


class _InOrder(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(self.commands)  # in the order they were defined: the usual workflow's


_classes: dict[type, type] = {}


def sectioned(command: click.Command) -> click.Command:
    """Give `command` (and a group's subcommands, listed in definition order) sectioned help."""
    cls = type(command)
    if not issubclass(cls, SectionedHelp):
        bases: tuple[type, ...] = (SectionedHelp, _InOrder, cls) if isinstance(command, click.Group) else (SectionedHelp, cls)
        if cls not in _classes:
            _classes[cls] = type(f"Sectioned{cls.__name__}", bases, {})
        command.__class__ = _classes[cls]
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            sectioned(sub)
    return command


def command_rows(names: list[str]) -> list[tuple[str, list[str]]]:
    """The root's command listing: (section, names) in COMMAND_SECTIONS order; names in no
    section go last under "Other commands"."""
    placed = {n for _, members in COMMAND_SECTIONS for n in members}
    out = [(title, [n for n in members if n in names]) for title, members in COMMAND_SECTIONS]
    rest = [n for n in names if n not in placed]
    if rest:
        out.append(("Other commands", rest))
    return [(title, members) for title, members in out if members]
