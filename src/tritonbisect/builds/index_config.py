"""Where published wheels come from, read the way the installers read it.

pip's configuration has many layers (a global, a user and a per-environment pip.conf,
PIP_CONFIG_FILE, PIP_* variables, `[global]` and `[install]` sections, os.devnull to turn
files off). Rather than re-implement that order, the target interpreter's own pip is asked:
`python -m pip config list` prints every value it would use, the variables as `:env:.key`.
When the target has no pip, the tool's pip is asked (`pip --python` does not apply to
`config`). An environment made by uv (`uv = ...` in its pyvenv.cfg) is read uv's way
instead: UV_* variables and uv.toml (UV_CONFIG_FILE, else the user's and the system's), when
they name an index; otherwise pip's.

Credentials come from the index URL itself (`https://user:pass@host/simple`), then `.netrc`
(NETRC or ~/.netrc), then keyring when it is importable. They are kept in this process only:
every URL the tool prints or stores goes through `redact` or `strip_auth`, and requests find
their credentials again by host (`auth_header`).
"""

from __future__ import annotations

import ast
import base64
import netrc
import os
import shutil
import ssl
import subprocess
import sys
import urllib.parse
import urllib.request
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from tritonbisect.core.secrets import redact_urls

PYPI = "https://pypi.org/simple"


@dataclass(frozen=True)
class IndexConfig:
    """The indexes, find-links and transport settings one run uses (URLs may hold credentials)."""

    index_url: str | None = PYPI  # None: --no-index
    extra_index_urls: tuple[str, ...] = ()
    find_links: tuple[str, ...] = ()  # directories, files or URLs
    cert: str | None = None
    client_cert: str | None = None
    trusted_hosts: tuple[str, ...] = ()
    proxy: str | None = None
    source: str = "default"  # where it was read: "pip config of PY", "uv", "options", ...
    origins: dict[str, str] = field(default_factory=dict, compare=False)  # setting -> where from
    # a configuration file pip or uv could not read (its settings are not used): said, never skipped silently
    problems: tuple[str, ...] = field(default=(), compare=False)

    @property
    def index_urls(self) -> list[str]:
        return ([self.index_url] if self.index_url else []) + list(self.extra_index_urls)

    def describe(self) -> list[str]:
        """Lines for the start of a run: what is read and from where (credentials redacted)."""
        out = []
        for u in self.index_urls:
            out.append(f"index {redact(u)} ({self.origins.get(u, self.source)}){_missing(u)}")
        for f in self.find_links:
            out.append(f"find-links {redact(f)} ({self.origins.get(f, self.source)}){_missing(f)}")
        if not out:
            out.append("no index and no find-links")
        extras = []
        if self.cert:
            extras.append(f"cert {self.cert}")
        if self.trusted_hosts:
            extras.append("trusted hosts " + ", ".join(self.trusted_hosts))
        if self.proxy:
            extras.append(f"proxy {redact(self.proxy)}")
        return out + extras


def _missing(location: str) -> str:
    """", not on disk: skipped" for a file: index or a find-links path that is not there
    (pip skips those with a warning too)."""
    if "://" in location and not location.startswith("file:"):
        return ""
    path = urllib.request.url2pathname(urllib.parse.urlsplit(location).path) if location.startswith("file:") else location
    return "" if Path(path).exists() else ", not on disk: skipped"


# --- credentials and redaction --------------------------------------------------------------


def split_auth(url: str) -> tuple[str, tuple[str, str] | None]:
    """(url without user:password@, (user, password) or None)."""
    parts = urllib.parse.urlsplit(url)
    if parts.username is None and parts.password is None:
        return url, None
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = host + (f":{parts.port}" if parts.port else "")
    bare = urllib.parse.urlunsplit(parts._replace(netloc=netloc))
    return bare, (urllib.parse.unquote(parts.username or ""), urllib.parse.unquote(parts.password or ""))


def strip_auth(url: str) -> str:
    return split_auth(url)[0]


def redact(url: str) -> str:
    """`https://user:****@host/...` as pip shows it; a URL without credentials unchanged."""
    bare, auth = split_auth(url)
    if auth is None:
        return url
    parts = urllib.parse.urlsplit(bare)
    user = urllib.parse.quote(auth[0], safe="") if auth[0] else ""
    shown = f"{user}:****@" if auth[1] else "****@"
    return urllib.parse.urlunsplit(parts._replace(netloc=shown + parts.netloc))


class Credentials:
    """user/password by host[:port], from URLs seen in this process, .netrc and keyring."""

    def __init__(self) -> None:
        self._known: dict[str, tuple[str, str]] = {}

    def remember(self, urls: Iterable[str]) -> None:
        for u in urls:
            _, auth = split_auth(u)
            if auth is not None:
                self._known[_netloc(u)] = auth

    def secrets(self) -> list[str]:
        return [p for _, p in self._known.values() if p]

    def lookup(self, url: str) -> tuple[str, str] | None:
        _, auth = split_auth(url)
        if auth is not None and auth[1]:
            return auth
        known = self._known.get(_netloc(url))
        if known is not None:
            if known[1]:
                return known
            got = _keyring(url, known[0])  # user in the URL, password in the keyring
            return (known[0], got[1]) if got else known
        return _netrc(url) or _keyring(url, None)


def _netloc(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    return f"{parts.hostname or ''}:{parts.port or ''}".lower()


def _netrc(url: str) -> tuple[str, str] | None:
    path = os.environ.get("NETRC") or str(Path.home() / ".netrc")
    host = urllib.parse.urlsplit(url).hostname or ""
    try:
        found = netrc.netrc(path).authenticators(host)
    except (OSError, netrc.NetrcParseError):
        return None
    if not found:
        return None
    login, _, password = found
    return (login or "", password or "")


def _keyring(url: str, user: str | None) -> tuple[str, str] | None:
    try:
        import keyring  # optional, as for pip
    except ImportError:
        return None
    host = urllib.parse.urlsplit(url).hostname or ""
    for service in (strip_auth(url), host):
        try:
            cred = keyring.get_credential(service, user)
        except Exception:  # noqa: BLE001  # a broken keyring backend must not stop a run
            return None
        if cred is not None and cred.password:
            return (cred.username or user or "", cred.password)
    return None


# --- reading pip's and uv's configuration ---------------------------------------------------

_LIST_KEYS = {"extra-index-url", "find-links", "trusted-host"}


def parse_pip_config_list(text: str) -> dict[str, str]:
    """{key: value} from `pip config list` output, in pip's precedence: PIP_* variables, then
    the [install] section, then [global] (files already merged by pip, the nearest last)."""
    by_section: dict[str, dict[str, str]] = {}
    for line in text.splitlines():
        key, sep, raw = line.partition("=")
        if not sep or "." not in key:
            continue
        section, _, name = key.rpartition(".")
        try:
            value = ast.literal_eval(raw.strip())
        except (ValueError, SyntaxError):
            value = raw.strip().strip("'\"")
        by_section.setdefault(section.strip(":"), {})[name.replace("_", "-")] = str(value)
    merged: dict[str, str] = {}
    for section in ("global", "download", "install", "env"):
        merged.update(by_section.get(section, {}))
    return merged


def pip_config_text(python: str) -> tuple[str, str, str]:
    """(`pip config list` output, whose pip answered, why pip could not read its configuration):
    the target's pip, else the tool's."""
    problem = ""
    for cmd, who in (([python, "-m", "pip"], python), ([sys.executable, "-m", "pip"], sys.executable)):
        try:
            proc = subprocess.run([*cmd, "config", "list"], capture_output=True, text=True, timeout=120,
                                  env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"})
        except (OSError, subprocess.SubprocessError):
            continue
        if proc.returncode == 0:
            return proc.stdout, who, ""
        problem = problem or config_problem(proc.stderr)
    return "", "", problem


def config_problem(stderr: str) -> str:
    """Why pip could not load a configuration file, in one line ("" when that is not why it failed):
    pip says `Configuration file could not be loaded.`, the parser's reason, and the file and line."""
    lines = [ln.strip().removeprefix("ERROR: ") for ln in stderr.strip().splitlines() if ln.strip()]
    for i, line in enumerate(lines):
        if line.lower().startswith("configuration file could not be loaded"):
            # the reason and the place; not the line's text, which may hold an index's password
            return redact_urls("; ".join(ln.rstrip(".") for ln in lines[i + 1 : i + 3]))[:300] or line
    return ""


def from_pip_values(values: dict[str, str], source: str) -> IndexConfig:
    def many(key: str) -> tuple[str, ...]:
        return tuple(values.get(key, "").split()) if key in _LIST_KEYS else ()

    no_index = values.get("no-index", "").lower() in ("1", "true", "yes", "on")
    return IndexConfig(
        index_url=None if no_index else (values.get("index-url") or PYPI),
        extra_index_urls=() if no_index else many("extra-index-url"),
        find_links=many("find-links"), cert=values.get("cert") or None,
        client_cert=values.get("client-cert") or None, trusted_hosts=many("trusted-host"),
        proxy=values.get("proxy") or None, source=source,
    )


def uv_managed(python: str) -> bool:
    """A venv made by uv says so in its pyvenv.cfg (`uv = 0.x`)."""
    cfg = Path(python).parent.parent / "pyvenv.cfg"
    try:
        return any(ln.split("=")[0].strip() == "uv" for ln in cfg.read_text().splitlines())
    except OSError:
        return False


def _uv_files() -> list[Path]:
    if os.environ.get("UV_NO_CONFIG"):
        return []
    if os.environ.get("UV_CONFIG_FILE"):
        return [Path(os.environ["UV_CONFIG_FILE"])]
    xdg = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    dirs = os.environ.get("XDG_CONFIG_DIRS", "/etc/xdg").split(":")
    return [Path(xdg) / "uv" / "uv.toml", *(Path(d) / "uv" / "uv.toml" for d in dirs), Path("/etc/uv/uv.toml")]


def uv_config(problems: list[str] | None = None) -> IndexConfig | None:
    """uv's index settings (variables over the first uv.toml found), None when it names none."""
    data: dict = {}
    where = "uv"
    try:
        import tomllib
    except ImportError:  # Python 3.10: uv.toml is not read, its variables are
        tomllib = None
    problems = problems if problems is not None else []
    for path in _uv_files() if tomllib else []:
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except OSError:
            continue
        except ValueError as exc:  # uv refuses such a file too: say so, never skip it silently
            problems.append(f"uv cannot read {path} ({str(exc)[:200]}): its index settings are not used; fix the file")
            continue
        where = f"uv: {path}"
        break
    data = data.get("pip", {}) | {k: v for k, v in data.items() if k != "pip"}
    indexes = [i for i in data.get("index", []) if isinstance(i, dict) and i.get("url")]
    default = os.environ.get("UV_DEFAULT_INDEX") or os.environ.get("UV_INDEX_URL") or data.get("index-url") or next(
        (i["url"] for i in indexes if i.get("default")), None)
    extra = (os.environ.get("UV_INDEX") or os.environ.get("UV_EXTRA_INDEX_URL") or "").split() or [
        *(i["url"] for i in indexes if not i.get("default")), *data.get("extra-index-url", [])]
    links = [x for x in os.environ.get("UV_FIND_LINKS", "").split(",") if x] or list(data.get("find-links", []))
    insecure = os.environ.get("UV_INSECURE_HOST", "").split() or list(data.get("allow-insecure-host", []))
    if not (default or extra or links):
        return None
    no_index = os.environ.get("UV_NO_INDEX") or data.get("no-index")
    return IndexConfig(
        index_url=None if no_index else (default or PYPI), extra_index_urls=() if no_index else tuple(extra),
        find_links=tuple(links), cert=os.environ.get("SSL_CERT_FILE") or None,
        trusted_hosts=tuple(insecure), source=where,
    )


def read_config(python: str, *, index_urls: Sequence[str] = (), find_links: Sequence[str] = (),
                use_config: bool = True) -> IndexConfig:
    """The configuration a run uses for the target `python`: explicit options win (an
    --index-url replaces the configured indexes, --find-links the configured find-links);
    the rest (cert, trusted hosts, proxy) still comes from the configuration."""
    base: IndexConfig | None = None
    problems: list[str] = []  # a file pip or uv cannot read: said at the start of the run
    if use_config and uv_managed(python):
        base = uv_config(problems)
    if base is None and use_config:
        text, who, problem = pip_config_text(python)
        base = from_pip_values(parse_pip_config_list(text), f"pip config of {who}") if who else None
        if problem:
            problems.append(f"pip cannot read its configuration ({problem}): its settings are not used; fix the "
                            "file, or give --index-url")
    if base is None:
        base = IndexConfig()
    base = replace(base, problems=tuple(problems))
    origins = {u: base.source for u in (*base.index_urls, *base.find_links)}
    if index_urls:
        base = replace(base, index_url=index_urls[0], extra_index_urls=tuple(index_urls[1:]))
        origins.update({u: "--index-url" for u in index_urls})
    if find_links:
        base = replace(base, find_links=tuple(find_links))
        origins.update({f: "--find-links" for f in find_links})
        if not index_urls:  # --find-links alone: that directory only, as before
            base = replace(base, index_url=None, extra_index_urls=())
    return replace(base, origins=origins)


# --- the process's active configuration and its requests -------------------------------------

CREDENTIALS = Credentials()
_ACTIVE: list[IndexConfig] = []


def activate(config: IndexConfig) -> IndexConfig:
    """Use `config` for this process's requests (its URL credentials are remembered)."""
    CREDENTIALS.remember([*config.index_urls, *config.find_links, *([config.proxy] if config.proxy else [])])
    _ACTIVE[:] = [config]
    return config


def active(python: str | None = None) -> IndexConfig:
    """The active configuration; read for `python` (default: this interpreter) on first use,
    e.g. in a worker process that installs a step's wheel."""
    if not _ACTIVE:
        activate(read_config(python or sys.executable))
    return _ACTIVE[0]


def auth_header(url: str) -> dict[str, str]:
    auth = CREDENTIALS.lookup(url)
    if auth is None:
        return {}
    token = base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode()
    return {"Authorization": f"Basic {token}"}


def _ssl_context(config: IndexConfig, host: str) -> ssl.SSLContext:
    if host in config.trusted_hosts or any(h.split(":")[0] == host for h in config.trusted_hosts):
        ctx = ssl._create_unverified_context()  # noqa: S323  # the user marked this host trusted
    else:
        ctx = ssl.create_default_context(cafile=config.cert if config.cert and Path(config.cert).is_file() else None,
                                         capath=config.cert if config.cert and Path(config.cert).is_dir() else None)
    if config.client_cert:
        ctx.load_cert_chain(config.client_cert)
    return ctx


class _AuthPerHost(urllib.request.HTTPRedirectHandler):
    """A redirect keeps the Authorization header only on the same host (a fallback to
    another index, a CDN for the files): elsewhere it gets that host's own credentials."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        if new is not None and _netloc(newurl) != _netloc(req.full_url):
            for name in ("Authorization",):
                new.headers.pop(name, None)
                new.unredirected_hdrs.pop(name, None)
            new.headers.update({k.capitalize(): v for k, v in auth_header(newurl).items()})
        return new


def open_url(url: str, *, headers: dict[str, str] | None = None, timeout: float = 60.0):
    """urlopen `url` with the active configuration's cert, trusted hosts, proxy and the
    credentials for its host. The URL given must carry no credentials of its own."""
    config = active()
    bare, _ = split_auth(url)
    host = urllib.parse.urlsplit(bare).hostname or ""
    handlers: list[urllib.request.BaseHandler] = [urllib.request.HTTPSHandler(context=_ssl_context(config, host))]
    extra: dict[str, str] = {}
    if config.proxy:
        proxy_bare, proxy_auth = split_auth(config.proxy)
        handlers.append(urllib.request.ProxyHandler({"http": proxy_bare, "https": proxy_bare}))
        if proxy_auth:
            token = base64.b64encode(f"{proxy_auth[0]}:{proxy_auth[1]}".encode()).decode()
            extra["Proxy-Authorization"] = f"Basic {token}"
    handlers.append(_AuthPerHost())
    opener = urllib.request.build_opener(*handlers)
    req = urllib.request.Request(bare, headers={"User-Agent": "tritonbisect", **(headers or {}),
                                                **auth_header(url), **extra})
    return opener.open(req, timeout=timeout)


def uv_binary(python: str | None = None) -> str | None:
    """uv on PATH or in the target environment's bin directory."""
    if python:
        local = Path(python).parent / "uv"
        if local.is_file() and os.access(local, os.X_OK):
            return str(local)
    return shutil.which("uv")
