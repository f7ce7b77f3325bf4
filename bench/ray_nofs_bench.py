"""Ray nodes without a shared filesystem: what shipping the repository and moving a wheel cost.

    python bench/ray_nofs_bench.py [--repo DIR] [--wheel FILE]

1. The repository: `bundle_for` of its HEAD (what a node gets the first time), and of the last
   10 commits over the rest (an incremental send); bytes, seconds to make, seconds for a
   node's worker to receive it through the object store and fetch it into its clone.
2. A wheel from builder to tester on a two-node Ray cluster on this machine: through the
   object store (pack on the builder, `ray.put`-ed result moved node to node, unpack and
   verify on the tester) against a shared directory cache (put on one side, verified get on
   the other), and through `--cache-url` on a local S3-compatible server (moto). Each figure
   is the median of 3.
"""

from __future__ import annotations

import argparse
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from tritonbisect.builds.cache import ArtifactCache  # noqa: E402
from tritonbisect.builds.cache_transfer import keys_of_commit, pack, unpack  # noqa: E402
from tritonbisect.executors.ray_repo import NodeRepo, bundle_for  # noqa: E402


class Side:
    """One node's cache (and clone), as a worker of that node holds them."""

    def __init__(self, folder: str) -> None:
        self.folder = Path(folder)
        self.cache = ArtifactCache(self.folder / "cache")

    def put_wheel(self, wheel: str, key: str) -> float:
        t0 = time.monotonic()
        self.cache.put(key, Path(wheel), {"commit": "c" * 40, "recipe": "bench"})
        return time.monotonic() - t0

    def export(self) -> bytes:
        return pack(self.cache, keys_of_commit(self.cache, "c" * 40))

    def import_entries(self, data: bytes) -> float:
        t0 = time.monotonic()
        unpack(self.cache, data)
        return time.monotonic() - t0

    def shared_get(self, root: str, key: str) -> float:
        t0 = time.monotonic()
        assert ArtifactCache(Path(root)).get(key) is not None
        return time.monotonic() - t0

    def receive(self, repo_id: str, data: bytes) -> float:
        t0 = time.monotonic()
        NodeRepo(self.folder, repo_id).receive(data)
        return time.monotonic() - t0

    def drop(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)
        self.cache = ArtifactCache(self.folder / "cache")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repo", default=str(ROOT))
    ap.add_argument("--wheel", default=None)
    args = ap.parse_args()
    import ray
    from ray.cluster_utils import Cluster

    repo = Path(args.repo)
    head = subprocess.check_output(["git", "rev-parse", "HEAD"], cwd=repo, text=True).strip()
    n_commits = subprocess.check_output(["git", "rev-list", "--count", "HEAD"], cwd=repo, text=True).strip()
    base = subprocess.check_output(["git", "rev-parse", "HEAD~10"], cwd=repo, text=True).strip()
    temp = tempfile.mkdtemp(prefix="tbb-", dir="/tmp")
    c = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 2, "resources": {"builder": 1}, "include_dashboard": False, "temp_dir": temp,
        "object_store_memory": 1 << 30})
    c.add_node(num_cpus=2, resources={"tester": 1}, object_store_memory=1 << 30)
    c.wait_for_nodes()
    ray.init(address=c.address, logging_level="ERROR", log_to_driver=False)
    try:
        remote = ray.remote(Side)
        builder = remote.options(resources={"builder": 1}, num_cpus=0).remote(f"{temp}/b")
        tester = remote.options(resources={"tester": 1}, num_cpus=0).remote(f"{temp}/t")
        print(f"{platform.machine()}, Python {platform.python_version()}, Ray {ray.__version__}")
        rows = []
        for what, commits, tips in (("first send (HEAD, whole history)", [head], []),
                                    ("incremental (last 10 commits)", [head], [base])):
            sizes, makes, recvs = [], [], []
            for i in range(3):
                data, made = bundle_for(repo, commits, tips)
                if tips:  # the node has the base already
                    ray.get(tester.receive.remote(f"r{i}", ray.put(bundle_for(repo, [base], [])[0])))
                t0 = time.monotonic()
                ray.get(tester.receive.remote(f"r{i}", ray.put(data)))
                recvs.append(time.monotonic() - t0)
                sizes.append(len(data))
                makes.append(made)
                ray.get(tester.drop.remote())
            rows.append((what, sizes[0], statistics.median(makes), statistics.median(recvs)))
        print(f"\nrepository {repo.name}: {n_commits} commits")
        print("| send | bundle | make | put + receive + fetch on the node |\n| --- | --- | --- | --- |")
        for what, size, make, recv in rows:
            print(f"| {what} | {size / 1024:.0f} KiB | {make:.2f} s | {recv:.2f} s |")

        if args.wheel:
            wheel = args.wheel
            size = Path(wheel).stat().st_size
            key = "k" * 64
            store_t, shared_t = [], []
            for _ in range(3):
                ray.get(builder.drop.remote())
                ray.get(tester.drop.remote())
                ray.get(builder.put_wheel.remote(wheel, key))
                t0 = time.monotonic()
                ray.get(tester.import_entries.remote(builder.export.remote()))
                store_t.append(time.monotonic() - t0)
                shared = Path(temp) / "shared"
                shutil.rmtree(shared, ignore_errors=True)
                t0 = time.monotonic()
                ArtifactCache(shared).put(key, Path(wheel), {"commit": "c" * 40})
                ray.get(tester.shared_get.remote(str(shared), key))
                shared_t.append(time.monotonic() - t0)
            print(f"\nwheel {Path(wheel).name}: {size / 2**20:.0f} MiB")
            print("| builder to tester | seconds |\n| --- | --- |")
            print(f"| object store (pack, node-to-node transfer, unpack + verify) | {statistics.median(store_t):.2f} s |")
            print(f"| shared directory (put, verified get) | {statistics.median(shared_t):.2f} s |")
            s3_figures(wheel, Path(temp))
    finally:
        ray.shutdown()
        c.shutdown()
        shutil.rmtree(temp, ignore_errors=True)


def s3_figures(wheel: str, temp: Path) -> None:
    """The same wheel through `--cache-url` on a local S3-compatible server (moto), when
    boto3 and moto[server] are installed: publish from one workdir, get from a fresh one."""
    import importlib.util
    import os
    import socket

    if not (importlib.util.find_spec("boto3") and importlib.util.find_spec("moto")):
        print("\n(--cache-url figures need boto3 and moto[server])")
        return
    import boto3

    from tritonbisect.builds.s3store import S3Store

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(300):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        os.environ.update(AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench",
                          AWS_DEFAULT_REGION="us-east-1", AWS_ENDPOINT_URL=f"http://127.0.0.1:{port}")
        boto3.client("s3").create_bucket(Bucket="bench")
        puts, gets = [], []
        for i in range(3):
            key = f"{i}" * 64
            t0 = time.monotonic()
            S3Store("s3://bench/c", temp / f"s3a{i}").put(key, Path(wheel), {"commit": "c" * 40})
            puts.append(time.monotonic() - t0)
            t0 = time.monotonic()
            assert S3Store("s3://bench/c", temp / f"s3b{i}").get(key) is not None
            gets.append(time.monotonic() - t0)
        print("| --cache-url (moto on 127.0.0.1) | seconds |\n| --- | --- |")
        print(f"| publish (local put, upload to tmp/, copy to the key) | {statistics.median(puts):.2f} s |")
        print(f"| get from a fresh workdir (download, unpack + verify) | {statistics.median(gets):.2f} s |")
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    main()
