"""builds/wheel_index.py on real file names: `packaging`'s PEP 440 order, wheel names and the
tags the target interpreter takes; index pages; and the version ladder's choices
(bisect/wheels.choose_rungs) over releases, +git nightlies, dated .dev builds, manylinux
variants and wheels for another Python."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tritonbisect.builds.wheel_index import (
    BadVersion,
    Platform,
    WheelFile,
    compatible,
    nearest,
    parse_project_page,
    parse_wheel_name,
    platform_of,
    sorted_versions,
    tag_supported,
    unordered_locals,
    version_key,
)
from tritonbisect.core.errors import InputError
from tritonbisect.domains.wheels.bisector import ancestry_order, choose_rungs

# file names as published: PyPI releases, Triton's nightly index, PyTorch's nightly index
REAL_NAMES = [
    "triton-3.2.0-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
    "triton-3.2.0-cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
    "triton-3.3.1-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl",
    "triton-3.4.0-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl",
    "triton-3.5.0-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl",
    "triton-3.5.0-cp311-cp311-manylinux_2_27_aarch64.manylinux_2_28_aarch64.whl",
    "triton-3.6.0-cp312-cp312-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl",  # no cp311 wheel
    "triton-3.6.0-cp313-cp313t-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl",  # free-threaded
    "triton-3.7.0+gitfeb6c04a-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl",
    "triton-3.7.0+git0a1b2c3d-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl",
    "pytorch_triton-3.0.0+45fff310c8-cp311-cp311-linux_x86_64.whl",
    "triton_nightly-2.1.0.dev20230822000928-0-cp311-cp311-manylinux2014_x86_64.manylinux_2_17_x86_64.whl",
    "triton_nightly-2.1.0.dev20230901000930-0-cp311-cp311-manylinux2014_x86_64.manylinux_2_17_x86_64.whl",
    "triton-3.9.0-cp311-cp311-manylinux_2_99_x86_64.whl",  # a glibc no machine has yet
]


def _files(names=REAL_NAMES) -> list[WheelFile]:
    out = []
    for n in names:
        name, version, tags = parse_wheel_name(n)
        out.append(WheelFile(n, f"https://h/{n}", "ab" * 32, version, tags))
    return out


# cp311 on a glibc 2.35 x86_64 Linux, as packaging.tags.sys_tags() lists it (a slice)
CP311 = Platform(tuple(
    [f"cp311-cp311-manylinux_2_{m}_x86_64" for m in range(35, 16, -1)] + ["cp311-cp311-manylinux2014_x86_64",
     "cp311-cp311-linux_x86_64", "cp311-abi3-manylinux_2_17_x86_64", "py3-none-manylinux_2_17_x86_64",
     "py311-none-any", "py3-none-any"]), "cp311", "manylinux_2_35_x86_64")


@pytest.fixture(scope="module")
def here() -> Platform:
    """This interpreter's tags, asked of it in a subprocess."""
    return platform_of(sys.executable)


def test_pep440_order_is_packagings():
    vs = ["3.10.0", "3.2.0", "3.5.0rc1", "3.5.0", "3.5.0.dev20250101", "3.5.0.post1", "3.5.0a2",
          "3.1", "3.5.0+git1234abcd", "2.1.0.dev20230822000928", "2.1.0.dev20230901000930"]
    assert sorted_versions(vs) == ["2.1.0.dev20230822000928", "2.1.0.dev20230901000930", "3.1", "3.2.0",
                                   "3.5.0.dev20250101", "3.5.0a2", "3.5.0rc1", "3.5.0", "3.5.0+git1234abcd",
                                   "3.5.0.post1", "3.10.0"]
    assert version_key("3.1") == version_key("3.1.0")
    with pytest.raises(BadVersion):
        version_key("latest")
    # the +git labels of one release compare as text: git0a.. before gitfe.. whatever the dates
    assert unordered_locals(["3.7.0+gitfeb6c04a", "3.7.0+git0a1b2c3d", "3.6.0"]) == ["3.7.0"]
    assert unordered_locals(["3.7.0+gitfeb6c04a", "3.6.0"]) == []


def test_real_wheel_names():
    name, version, tags = parse_wheel_name(REAL_NAMES[0])
    assert (name, version) == ("triton", "3.2.0")
    assert tags == ("cp311-cp311-manylinux2014_x86_64", "cp311-cp311-manylinux_2_17_x86_64")
    assert parse_wheel_name(REAL_NAMES[10])[:2] == ("pytorch-triton", "3.0.0+45fff310c8")
    assert parse_wheel_name(REAL_NAMES[11])[:2] == ("triton-nightly", "2.1.0.dev20230822000928")  # build tag 0
    assert parse_wheel_name("triton-3.2.0.tar.gz") is None
    assert parse_wheel_name("triton-notaversion-py3-none-any.whl") is None


def test_tags_of_this_interpreter(here):
    """The tags come from the target interpreter: its own version and its glibc."""
    assert here.interpreter == f"cp{sys.version_info[0]}{sys.version_info[1]}"
    assert tag_supported("py3-none-any", here)
    assert not tag_supported("cp39-cp39-win_amd64", here)
    glibc = subprocess.run([sys.executable, "-c", "import os; print(os.confstr('CS_GNU_LIBC_VERSION'))"],
                           capture_output=True, text=True).stdout.split()[-1]
    major, minor = (int(x) for x in glibc.split(".")[:2])
    machine = here.platform.rsplit("_", 2)[-2:]
    arch = "_".join(machine) if machine[0] == "x86" else machine[-1]
    assert tag_supported(f"{here.interpreter}-{here.interpreter}-manylinux_{major}_{minor}_{arch}", here)
    assert not tag_supported(f"{here.interpreter}-{here.interpreter}-manylinux_{major}_{minor + 1}_{arch}", here)


def test_compatible_and_best_wheel_on_real_names():
    files = _files()
    ok = {f.filename for f in compatible(files, CP311)}
    assert REAL_NAMES[0] in ok and REAL_NAMES[1] not in ok  # cp312 wheel
    assert REAL_NAMES[5] not in ok  # aarch64
    assert REAL_NAMES[6] not in ok and REAL_NAMES[7] not in ok  # cp312, free-threaded cp313t
    assert REAL_NAMES[13] not in ok  # manylinux_2_99: glibc too new
    assert REAL_NAMES[10] in ok  # linux_x86_64
    # the ladder takes, per version, the wheel the interpreter prefers
    pure = WheelFile("triton-3.4.0-py3-none-any.whl", "https://h/p", "cd" * 32, "3.4.0", ("py3-none-any",))
    rungs = choose_rungs([*files, pure], CP311, "3.2.0", "3.5.0", package="triton", pre=False)
    assert [r.version for r in rungs] == ["3.2.0", "3.3.1", "3.4.0", "3.5.0"]
    assert rungs[2].wheel.filename == REAL_NAMES[3]  # manylinux before py3-none-any


def test_another_pythons_wheel_is_refused_with_the_nearest_usable_versions():
    with pytest.raises(InputError) as err:
        choose_rungs(_files(), CP311, "3.2.0", "3.6.0", package="triton", pre=False)
    msg = str(err.value)
    assert "3.6.0 has no wheel for cp311 on manylinux_2_35_x86_64" in msg
    assert "cp312-cp312-manylinux_2_27_x86_64" in msg  # what it has instead
    assert "nearest with one: 3.3.1, 3.4.0, 3.5.0, 3.7.0+git0a1b2c3d, 3.7.0+gitfeb6c04a" in msg
    with pytest.raises(InputError, match="has no such version on the index; nearest: 3.3.1, 3.4.0, 3.5.0, 3.6.0, "):
        choose_rungs(_files(), CP311, "3.5.5", "3.6.0", package="triton", pre=False)


def test_dated_dev_builds_order_by_date():
    rungs = choose_rungs(_files(), CP311, "2.1.0.dev20230822000928", "2.1.0.dev20230901000930",
                         package="triton-nightly", pre=False)
    assert [r.version for r in rungs] == ["2.1.0.dev20230822000928", "2.1.0.dev20230901000930"]


def test_nightlies_by_ancestry_of_a_checkout(tmp_path):
    """Two +git nightlies of 3.7.0: PEP 440 puts git0a1b.. first (text); the checkout's
    history puts the one made first first."""
    repo = tmp_path / "triton"
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin"}
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    shas = []
    for i in range(40):  # enough commits to find one whose label sorts after the next one's
        subprocess.run(["git", "-C", str(repo), "commit", "-q", "--allow-empty", "-m", f"c{i}"], check=True, env=env)
        shas.append(subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True,
                                   text=True).stdout.strip())
    old, new = next((a, b) for a, b in zip(shas, shas[1:], strict=False) if a[:8] > b[:8])
    versions = [f"3.7.0+git{new[:8]}", f"3.7.0+git{old[:8]}", "3.6.0", "3.8.0"]
    assert sorted_versions(versions)[1:3] == [f"3.7.0+git{new[:8]}", f"3.7.0+git{old[:8]}"]  # text order
    order, note = ancestry_order(versions, repo)
    assert note == "" and order == ["3.6.0", f"3.7.0+git{old[:8]}", f"3.7.0+git{new[:8]}", "3.8.0"]
    files = [WheelFile(f"triton-{v}-py3-none-any.whl", f"https://h/{v}", None, v, ("py3-none-any",))
             for v in versions]
    rungs = choose_rungs(files, CP311, f"3.7.0+git{old[:8]}", "3.8.0", package="triton", pre=False, order=order)
    assert [r.version for r in rungs] == [f"3.7.0+git{old[:8]}", f"3.7.0+git{new[:8]}", "3.8.0"]
    order, note = ancestry_order([*versions, "3.7.0+gitdeadbeef"], repo)
    assert order is None and "1 of 3 nightlies name a commit" in note


def test_project_pages_html_and_json():
    html = (b'<a href="../../files/triton-3.2.0-py3-none-any.whl#sha256=' + b"ab" * 32 + b'">x</a>'
            b'<a href="https://u:secret@h/triton-3.3.0-py3-none-any.whl" data-yanked="">y</a>'
            b'<a href="https://h/tritonx-3.3.0-py3-none-any.whl">other package</a>')
    files = parse_project_page(html, "text/html", "http://127.0.0.1:9/simple/triton/", "triton")
    assert [f.version for f in files] == ["3.2.0", "3.3.0"]
    assert files[0].url == "http://127.0.0.1:9/files/triton-3.2.0-py3-none-any.whl"
    assert files[1].url == "https://h/triton-3.3.0-py3-none-any.whl"  # credentials are never kept
    assert files[0].sha256 == "ab" * 32 and files[1].yanked
    assert [f.version for f in compatible(files, CP311)] == ["3.2.0"]  # yanked is left out
    body = json.dumps({"files": [{"filename": "triton-3.4.0-py3-none-any.whl", "url": "f/t.whl",
                                  "hashes": {"sha256": "cd" * 32}}]}).encode()
    [f] = parse_project_page(body, "application/vnd.pypi.simple.v1+json", "https://i/simple/triton/",
                             "triton")
    assert (f.version, f.sha256, f.url) == ("3.4.0", "cd" * 32, "https://i/simple/triton/f/t.whl")
    assert WheelFile.from_dict(f.to_dict()) == f


def test_nearest_versions():
    vs = ["3.0.0", "3.1.0", "3.2.0", "3.3.0", "3.4.0"]
    assert nearest("3.2.5", vs, 2) == ["3.1.0", "3.2.0", "3.3.0", "3.4.0"]
    assert nearest("9.0", vs, 2) == ["3.3.0", "3.4.0"]


def test_the_cli_names_every_feed():
    from tritonbisect.builds.wheel_feeds import FEEDS, feed_named
    from tritonbisect.domains.triton.command import NIGHTLY_FEEDS
    from tritonbisect.domains.wheels.command import FEED_NAMES

    assert set(FEED_NAMES) == set(FEEDS) and set(NIGHTLY_FEEDS) == set(FEEDS) - {"pypi"}
    assert {"triton", "triton-rocm", "triton-xpu", "pytorch-triton"} <= set(feed_named("pytorch-nightly").packages)
    with pytest.raises(KeyError, match="one of pypi, triton-nightly, pytorch-nightly"):
        feed_named("nope")
