"""`tritonbisect cache list|remove|gc|forget-failures`: look after the artifact cache."""

from __future__ import annotations

import datetime as _dt
from pathlib import Path

import click

from tritonbisect.builds.cache import ArtifactCache, human_size, parse_size
from tritonbisect.core.step_args import default_workdir


def _cache(ctx: click.Context) -> ArtifactCache:
    workdir = ctx.obj.get("workdir") or default_workdir()
    return ArtifactCache(Path(workdir) / "cache")


_WORKDIR_HELP = "The tool's workdir (default: $TRITONBISECT_HOME or the user cache dir)."
_WORKDIR = click.option(
    "--workdir", type=click.Path(file_okay=False, path_type=Path), help=_WORKDIR_HELP
)


def _store_workdir(ctx: click.Context, _param: click.Parameter, value: Path | None) -> None:
    if value is not None:
        ctx.ensure_object(dict)["workdir"] = value


# Every other command takes --workdir after its name, so `cache list --workdir D` works too.
_accepts_workdir = click.option(
    "--workdir",
    type=click.Path(file_okay=False, path_type=Path),
    expose_value=False,
    callback=_store_workdir,
    help=_WORKDIR_HELP,
)


def _when(epoch: float) -> str:
    if not epoch:
        return "-"
    return _dt.datetime.fromtimestamp(epoch).strftime("%Y-%m-%d %H:%M")


@click.group("cache")
@_WORKDIR
@click.pass_context
def cache_group(ctx: click.Context, workdir: Path | None) -> None:
    """Built artifacts (wheels, LLVM installs), downloaded wheels and recorded build failures."""
    ctx.ensure_object(dict)
    ctx.obj["workdir"] = workdir


@cache_group.command("list")
@_accepts_workdir
@click.option("--failures", "show_failures", is_flag=True, help="Also list the recorded build failures.")
@click.pass_context
def list_cmd(ctx: click.Context, show_failures: bool) -> None:
    """Entries with their size, commit, recipe and last use; downloaded wheels."""
    from tritonbisect.builds.wheel_fetch import downloaded_wheels

    cache = _cache(ctx)
    entries = sorted(cache.entries(), key=lambda e: -e.last_used)
    wheels = sorted(downloaded_wheels(cache.root), key=lambda w: -w.last_used)
    if not entries and not wheels:
        click.echo(f"cache {cache.root}: empty")
    elif not entries:
        click.echo(f"cache {cache.root}: no built artifacts")
    else:
        click.echo(f"{'KEY':<12}  {'RECIPE':<12}  {'COMMIT':<12}  {'SIZE':>10}  LAST USED         ARTIFACT")
        for e in entries:
            click.echo(
                f"{e.key[:12]:<12}  {e.recipe[:12]:<12}  {e.commit[:12]:<12}  "
                f"{human_size(e.size):>10}  {_when(e.last_used):<16}  {e.path.name}"
            )
        total = sum(e.size for e in entries)
        click.echo(f"{len(entries)} entries, {human_size(total)} in {cache.root}")
    if wheels:
        click.echo(f"\n{'SHA256':<12}  {'SIZE':>10}  LAST USED         DOWNLOADED WHEEL")
        for w in wheels:
            click.echo(f"{w.sha256[:12]:<12}  {human_size(w.size):>10}  {_when(w.last_used):<16}  {w.filename}")
        click.echo(f"{len(wheels)} downloaded wheel{'s' * (len(wheels) != 1)}, "
                   f"{human_size(sum(w.size for w in wheels))} in {cache.root / 'downloads'}")
    failures = cache.failures()
    if failures:
        click.echo(f"{len(failures)} recorded build failure{'s' if len(failures) != 1 else ''}"
                   " (not rebuilt; `tritonbisect cache forget-failures` to retry them)")
        if show_failures:
            for f in failures:
                click.echo(f"  {f.key[:12]}  {f.recipe[:12]:<12}  {f.commit[:12]:<12}  {f.kind}: {f.reason[:120]}")


@cache_group.command("remove")
@_accepts_workdir
@click.argument("key", required=False)
@click.option("--commit", help="Remove every entry built from this commit (sha or prefix).")
@click.pass_context
def remove_cmd(ctx: click.Context, key: str | None, commit: str | None) -> None:
    """Remove one entry (KEY, or a unique prefix of it) or all entries of --commit."""
    if bool(key) == bool(commit):
        raise click.UsageError("give either KEY or --commit SHA")
    cache = _cache(ctx)
    if commit:
        try:
            removed = cache.remove_commit(commit)
        except ValueError as exc:
            raise click.UsageError(str(exc)) from None
        click.echo(f"removed {len(removed)} entr{'y' if len(removed) == 1 else 'ies'} of commit {commit}")
        return
    assert key is not None
    matches = [e.key for e in cache.entries() if e.key.startswith(key.lower())]
    if len(matches) > 1:
        raise click.UsageError(f"key prefix {key} is ambiguous ({len(matches)} entries)")
    if not matches or not cache.remove(matches[0]):
        raise click.ClickException(f"no cache entry {key}")
    click.echo(f"removed {matches[0][:12]}")


@cache_group.command("gc")
@_accepts_workdir
@click.option("--max-size", required=True, help="Keep at most this much, built artifacts and downloaded wheels together, e.g. 20G (least recently used go first).")
@click.pass_context
def gc_cmd(ctx: click.Context, max_size: str) -> None:
    """Remove least recently used entries and downloaded wheels until the cache fits in --max-size."""
    from tritonbisect.builds.wheel_fetch import downloaded_wheels, remove_download

    try:
        limit = parse_size(max_size)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--max-size") from None
    cache = _cache(ctx)
    items = [(e.last_used, "entry", e.key, e.size, e.key[:12]) for e in cache.entries()]
    items += [(w.last_used, "wheel", w.sha256, w.size, w.filename) for w in downloaded_wheels(cache.root)]
    total = sum(size for _, _, _, size, _ in items)
    freed = 0
    for _, kind, key, size, name in sorted(items):
        if total - freed <= limit:
            break
        gone = cache.remove(key) if kind == "entry" else remove_download(cache.root, key)
        if gone:
            freed += size
            click.echo(f"removed {name} ({human_size(size)})")
    click.echo(f"freed {human_size(freed)}; {human_size(total - freed)} left")


@cache_group.command("forget-failures")
@_accepts_workdir
@click.option("--commit", help="Only the failures of this commit (sha or prefix).")
@click.pass_context
def forget_failures_cmd(ctx: click.Context, commit: str | None) -> None:
    """Forget recorded build failures so those commits are built again."""
    gone = _cache(ctx).forget_failures(commit)
    click.echo(f"forgot {len(gone)} recorded build failure{'s' if len(gone) != 1 else ''}")


COMMANDS = [cache_group]
