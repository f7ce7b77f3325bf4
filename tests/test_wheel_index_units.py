"""Pure rules of build/wheel_index.py: PEP 440 order, wheel names, tags, index pages."""

from __future__ import annotations

import json

import pytest

from tritonbisect.build.wheel_index import (
    BadVersion,
    Platform,
    WheelFile,
    compatible,
    nearest,
    parse_project_page,
    parse_wheel_name,
    sorted_versions,
    tag_supported,
    version_key,
)

LINUX = Platform("cp", 3, 11, "x86_64", "linux", (2, 35))


def test_pep440_order():
    vs = ["3.10.0", "3.2.0", "3.5.0rc1", "3.5.0", "3.5.0.dev20250101", "3.5.0.post1", "3.5.0a2",
          "3.1", "3.5.0+git1234abcd"]
    assert sorted_versions(vs) == ["3.1", "3.2.0", "3.5.0.dev20250101", "3.5.0a2", "3.5.0rc1",
                                   "3.5.0", "3.5.0+git1234abcd", "3.5.0.post1", "3.10.0"]
    assert version_key("3.1") == version_key("3.1.0")
    with pytest.raises(BadVersion):
        version_key("latest")


def test_wheel_names_and_tags():
    name, version, tags = parse_wheel_name(
        "triton-3.2.0-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl")
    assert (name, version) == ("triton", "3.2.0") and len(tags) == 2
    assert all(tag_supported(t, LINUX) for t in tags)
    assert not tag_supported(("cp311", "cp311", "manylinux_2_39_x86_64"), LINUX)  # glibc too old
    assert not tag_supported(("cp312", "cp312", "manylinux_2_27_x86_64"), LINUX)
    assert not tag_supported(("cp311", "cp311", "manylinux_2_27_aarch64"), LINUX)
    assert tag_supported(("cp39", "abi3", "manylinux2014_x86_64"), LINUX)
    assert tag_supported(("py3", "none", "any"), LINUX)
    assert not tag_supported(("cp311", "cp311", "win_amd64"), LINUX)
    assert parse_wheel_name("triton-3.2.0.tar.gz") is None
    assert parse_wheel_name("pytorch_triton-3.5.0+git5ae52a2b-cp311-cp311-linux_x86_64.whl")[:2] == (
        "pytorch-triton", "3.5.0+git5ae52a2b")


def test_nearest_versions():
    vs = ["3.0.0", "3.1.0", "3.2.0", "3.3.0", "3.4.0"]
    assert nearest("3.2.5", vs, 2) == ["3.1.0", "3.2.0", "3.3.0", "3.4.0"]
    assert nearest("9.0", vs, 2) == ["3.3.0", "3.4.0"]


def test_project_pages_html_and_json():
    html = (b'<a href="../../files/triton-3.2.0-py3-none-any.whl#sha256=' + b"ab" * 32 + b'">x</a>'
            b'<a href="https://h/triton-3.3.0-py3-none-any.whl" data-yanked="">y</a>'
            b'<a href="https://h/tritonx-3.3.0-py3-none-any.whl">other package</a>')
    files = parse_project_page(html, "text/html", "http://127.0.0.1:9/simple/triton/", "triton")
    assert [f.version for f in files] == ["3.2.0", "3.3.0"]
    assert files[0].url == "http://127.0.0.1:9/files/triton-3.2.0-py3-none-any.whl"
    assert files[0].sha256 == "ab" * 32 and files[1].yanked
    assert [f.version for f in compatible(files, LINUX)] == ["3.2.0"]  # yanked is left out
    body = json.dumps({"files": [{"filename": "triton-3.4.0-py3-none-any.whl", "url": "f/t.whl",
                                  "hashes": {"sha256": "cd" * 32}}]}).encode()
    [f] = parse_project_page(body, "application/vnd.pypi.simple.v1+json", "https://i/simple/triton/",
                             "triton")
    assert (f.version, f.sha256, f.url) == ("3.4.0", "cd" * 32, "https://i/simple/triton/f/t.whl")
    assert WheelFile.from_dict(f.to_dict()) == f
