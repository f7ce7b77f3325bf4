"""The claude CLI's only way out of its sandbox: one TCP destination, the host of its API.

The sandbox has no network. Inside it a small forwarder listens on 127.0.0.1 at the API's
port and passes each connection through a Unix socket (bound into the sandbox) to the gate
here, which connects it to the API host and nothing else. The sandbox's /etc/hosts names
the API host 127.0.0.1, so the CLI connects to its usual URL and TLS is end to end (the
gate never sees the key or the traffic in clear). No other host, port or name resolves.
"""

from __future__ import annotations

import contextlib
import shlex
import socket
import sys
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import urlsplit

DEFAULT_API = "https://api.anthropic.com"

# Runs inside the sandbox (argv: unix socket, port, ready file): 127.0.0.1:port -> the gate.
_FORWARDER = """
import socket, sys, threading
path, port, ready = sys.argv[1], int(sys.argv[2]), sys.argv[3]
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", port))
srv.listen(64)
open(ready, "w").close()
def pipe(a, b):
    try:
        while True:
            data = a.recv(65536)
            if not data:
                break
            b.sendall(data)
    except OSError:
        pass
    for s in (a, b):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
while True:
    client, _ = srv.accept()
    gate = socket.socket(socket.AF_UNIX)
    gate.connect(path)
    threading.Thread(target=pipe, args=(client, gate), daemon=True).start()
    threading.Thread(target=pipe, args=(gate, client), daemon=True).start()
"""

_START = """
python=$1 sock=$2 port=$3; shift 3
"$python" -c "$FORWARDER" "$sock" "$port" /tmp/.api-gate-ready &
for _ in $(seq 400); do [ -e /tmp/.api-gate-ready ] && break; sleep 0.05; done
exec "$@"
"""


class ApiGate:
    """The host side: a Unix socket whose every connection goes to `base_url`'s host and port."""

    def __init__(self, base_url: str | None) -> None:
        parts = urlsplit(base_url or DEFAULT_API)
        if not parts.hostname:
            raise ValueError(f"not a URL: {base_url!r}")
        self.host = parts.hostname
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        self.folder = Path(tempfile.mkdtemp(prefix="tritonbisect-api-gate-"))
        self.socket_path = self.folder / "api.sock"
        self.hosts_file = self.folder / "hosts"
        self._server: socket.socket | None = None
        self._stop = threading.Event()

    def __enter__(self) -> ApiGate:
        lines = ["127.0.0.1 localhost", "::1 localhost"]
        if not _is_ip(self.host) and self.host != "localhost":
            lines.append(f"127.0.0.1 {self.host}")
        self.hosts_file.write_text("\n".join(lines) + "\n", encoding="utf-8")
        self._server = socket.socket(socket.AF_UNIX)
        self._server.bind(str(self.socket_path))
        self._server.listen(64)
        self._server.settimeout(0.2)
        threading.Thread(target=self._serve, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._server is not None:
            self._server.close()
        import shutil

        shutil.rmtree(self.folder, ignore_errors=True)

    def command(self, argv: Sequence[str]) -> list[str]:
        """`argv` started inside the sandbox behind the forwarder."""
        script = f"FORWARDER={shlex.quote(_FORWARDER)}\n{_START}"
        return ["/bin/bash", "-c", script, "api-gate", sys.executable, str(self.socket_path),
                str(self.port), *argv]

    def _serve(self) -> None:
        assert self._server is not None
        while not self._stop.is_set():
            try:
                client, _ = self._server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=self._connect, args=(client,), daemon=True).start()

    def _connect(self, client: socket.socket) -> None:
        try:
            upstream = socket.create_connection((self.host, self.port), timeout=30)
        except OSError:
            client.close()
            return
        upstream.settimeout(None)
        threading.Thread(target=_pipe, args=(client, upstream), daemon=True).start()
        _pipe(upstream, client)


def _pipe(a: socket.socket, b: socket.socket) -> None:
    try:
        while data := a.recv(65536):
            b.sendall(data)
    except OSError:
        pass
    for s in (a, b):
        with contextlib.suppress(OSError):
            s.shutdown(socket.SHUT_RDWR)


def _is_ip(host: str) -> bool:
    import ipaddress

    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True
