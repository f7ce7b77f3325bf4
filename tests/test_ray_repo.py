"""A node's clone of the bisected repository, filled by bundles or from a URL (no Ray)."""

from __future__ import annotations

import subprocess

from engine_repo import linear, snapshot
from tritonbisect.executors.ray_repo import NodeRepo, bundle_for


def test_bundles_fill_a_node_once_then_incrementally_and_leave_the_repository_alone(tmp_path):
    repo = tmp_path / "repo"
    shas = linear(repo, 30, culprit=20)
    before = snapshot(repo)
    node = NodeRepo(tmp_path / "node", "rid")
    assert node.lacks(shas[10]) == []  # an empty clone: everything must come
    first, _ = bundle_for(repo, [shas[10]], [])
    node.receive(first)
    assert node.lacks(shas[10]) is None and node.lacks(shas[0]) is None
    tips = node.lacks(shas[29])
    assert tips == [shas[10]]
    more, _ = bundle_for(repo, [shas[29]], tips)
    header = more.split(b"\n\n", 1)[0].decode()
    assert f"-{shas[10]}" in header  # only what the node lacks: it has c10 and its history
    node.receive(more)
    assert node.lacks(shas[29]) is None
    # worktrees can be added from the clone: it has a HEAD
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=node.path, capture_output=True, text=True)
    assert head.stdout.strip() in shas
    assert snapshot(repo) == before  # no ref, no object, no file of the user's repository changed


def test_a_url_serves_the_node_and_a_bundle_covers_what_it_lacks(tmp_path):
    repo = tmp_path / "repo"
    shas = linear(repo, 12, culprit=6)
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(repo), str(remote)], check=True)
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=a", "-c", "user.email=a@b", "commit", "-q",
                    "--allow-empty", "-m", "local only"], check=True)
    local = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True,
                           text=True, check=True).stdout.strip()
    node = NodeRepo(tmp_path / "node", "rid", url=str(remote))
    assert node.lacks(shas[11]) is None  # fetched from the URL
    tips = node.lacks(local)  # not pushed: the URL does not have it
    assert tips and shas[11] in tips
    data, _ = bundle_for(repo, [local], tips)
    node.receive(data)
    assert node.lacks(local) is None


def test_a_node_that_sees_the_drivers_repository_fetches_from_it(tmp_path):
    repo = tmp_path / "repo"
    shas = linear(repo, 8, culprit=4)
    node = NodeRepo(tmp_path / "node", "rid", local=str(repo))
    assert node.lacks(shas[7]) is None and node.lacks(shas[0]) is None  # no bundle needed
    unseen = NodeRepo(tmp_path / "node2", "rid", local=str(tmp_path / "not-here"))
    assert unseen.lacks(shas[7]) == []  # a path the node does not have: the driver sends it
