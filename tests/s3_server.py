"""A real S3-compatible server on 127.0.0.1 for tests: moto in server mode, in a subprocess
started and ended (by its handle) here."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

SECRET = "s3cr3t-d0-not-l0g-7f3a"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def moto_server(bucket: str) -> Iterator[tuple[dict[str, str], Any]]:
    """(the AWS_* environment reaching it, a boto3 client) with `bucket` made."""
    import boto3

    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    env = {"AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}", "AWS_ACCESS_KEY_ID": "tbtest",
           "AWS_SECRET_ACCESS_KEY": SECRET, "AWS_DEFAULT_REGION": "us-east-1"}
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError("moto server did not start") from None
                time.sleep(0.2)
        client = boto3.client("s3", endpoint_url=env["AWS_ENDPOINT_URL"], aws_access_key_id="tbtest",
                              aws_secret_access_key=SECRET, region_name="us-east-1")
        client.create_bucket(Bucket=bucket)
        yield env, client
    finally:
        proc.terminate()
        proc.wait(timeout=30)
