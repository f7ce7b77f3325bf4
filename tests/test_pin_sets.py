"""The LLVMs a Triton commit pins, as a set: the core pin, the backend pins and the NVIDIA
toolchain, read from every file Triton has used. Nothing is built here.

Facts of the real files, read with the search tools from triton-lang/triton:
* cmake/amd-llvm-info.json: {"llvm_hash": <40 hex>, "build_number": 1, "sha256sum": {}};
  a later shape adds "bootstrap_llvm": {"build_number", "sha256sum": {platform: digest}}
  (the LLVM SDK the codegen library is built with when no prebuilt library is published;
  python/test/unit/test_build.py). The prebuilt library is amd-codegen-<hash8>-<platform>-<build>.
* cmake/amd-llvm-build-info.json: {"llvm_hash", "repository": "ROCm/llvm-project", "build_number"}.
* cmake/nvidia-llvm-build-info.json (triton PR #11484): {"llvm_hash", "repository":
  "llvm/llvm-project", "build_number"}.
* cmake/llvm-build-info.json: {"llvm_hash", "repository": "triton-lang/llvm-project",
  "build_number"}; "repository" is optional, llvm/llvm-project when absent (triton PR #10632);
  it is updated first, to produce a prebuilt, and llvm-info.json then consumes it (#10468).
* cmake/nvidia-toolchain-version.json: {"ptxas": "12.8.93", "cuobjdump", "nvdisasm",
  "cudacrt", "cudart", "cupti"}, later with "ptxas-blackwell"; before it,
  cmake/nvidia-toolchain-version.txt held one version ("12.4.99").
"""

from __future__ import annotations

import json

import pytest

from tritonbisect.domains.triton.llvm_pin import BUMP, FORMAT, PREBUILT, PinError
from tritonbisect.domains.triton.pin_set import (
    ADDED,
    REMOVED,
    TOOLCHAIN,
    pin_set_changes,
    read_pin_set,
)

CORE_FORK = "4611156032e1ebac68b2b8f6107b1475a7c60800"  # release/3.8.x: upstream + a cherry-pick
AMD = "ce3529423abda3fc4ad0b542daa50af21e539a29"
ROCM = "d0c52018c28bbf7f4969cae7d115214ff4fd8629"


def files(**extra: object) -> dict[str, str]:
    tree = {
        "cmake/llvm-info.json": json.dumps({"llvm_hash": CORE_FORK, "build_number": 1,
                                            "sha256sum": {"ubuntu-x64": "0" * 64}}),
        "cmake/llvm-build-info.json": json.dumps({"llvm_hash": CORE_FORK, "repository": "triton-lang/llvm-project",
                                                  "build_number": 1}),
    }
    for path, value in extra.items():
        name = path.replace("__", "/").replace("_", "-").replace("-json", ".json").replace("-txt", ".txt")
        if value is None:
            tree.pop(name, None)
        else:
            tree[name] = value if isinstance(value, str) else json.dumps(value)
    return tree


def amd_info(commit: str = AMD, build: int = 1, boot: bool = False) -> dict:
    info: dict = {"llvm_hash": commit, "build_number": build, "sha256sum": {}}
    if boot:
        info["bootstrap_llvm"] = {"build_number": 1, "sha256sum": {"macos-arm64": "f" * 64}}
    return info


def test_the_core_pin_comes_from_the_fork_its_build_info_names():
    pins = read_pin_set(files().get)
    assert pins is not None and [p.name for p in pins.pins] == ["core"]
    assert (pins.core.commit, pins.core.repository, pins.core.build_number) == (
        CORE_FORK, "triton-lang/llvm-project", 1)
    # the build info describing another commit is the next LLVM being prepared: upstream's pin
    other = files(cmake__llvm_build_info_json={"llvm_hash": "a" * 40, "repository": "triton-lang/llvm-project"})
    assert read_pin_set(other.get).core.repository == "llvm/llvm-project"
    # no "repository": llvm/llvm-project, as the build workflow defaults
    bare = files(cmake__llvm_build_info_json={"llvm_hash": CORE_FORK, "build_number": 1})
    assert read_pin_set(bare.get).core.repository == "llvm/llvm-project"


def test_backend_pins_with_their_repositories():
    tree = files(cmake__amd_llvm_info_json=amd_info(ROCM, 2, boot=True),
                 cmake__amd_llvm_build_info_json={"llvm_hash": ROCM, "repository": "ROCm/llvm-project",
                                                  "build_number": 2},
                 cmake__nvidia_llvm_info_json=amd_info(AMD),
                 cmake__nvidia_llvm_build_info_json={"llvm_hash": AMD, "repository": "llvm/llvm-project",
                                                     "build_number": 1})
    pins = read_pin_set(tree.get)
    assert [p.name for p in pins.pins] == ["core", "amd", "nvidia"]
    amd = pins.get("amd")
    assert (amd.commit, amd.build_number, amd.repository, amd.bootstrap_build) == (ROCM, 2, "ROCm/llvm-project", 1)
    assert amd.revision() == f"{ROCM}-2"  # what TRITON_AMD_LLVM_REVISION carries
    assert amd.describe() == f"AMD LLVM ROCm/llvm-project@{ROCM[:12]} build 2"
    assert pins.get("nvidia").repository == "llvm/llvm-project"
    # the first real amd-llvm-info.json: no build info, no bootstrap entry
    first = read_pin_set(files(cmake__amd_llvm_info_json=amd_info()).get)
    assert first.get("amd").repository == "llvm/llvm-project" and first.get("amd").bootstrap_build is None


def test_the_toolchain_in_both_of_its_files():
    versions = {"ptxas": "12.8.93", "ptxas-blackwell": "12.9.86", "cuobjdump": "12.8.55", "nvdisasm": "12.8.55",
                "cudacrt": "12.8.61", "cudart": "12.8.57", "cupti": "12.8.57"}
    pins = read_pin_set(files(cmake__nvidia_toolchain_version_json=versions).get)
    assert pins.toolchain.version("ptxas") == "12.8.93" and pins.toolchain.version("ptxas-blackwell") == "12.9.86"
    old = read_pin_set(files(cmake__nvidia_toolchain_version_txt="12.4.99\n").get)
    assert old.toolchain.version("cuda") == "12.4.99"


def test_a_change_of_any_pin_is_a_bump_of_that_llvm():
    base = files(cmake__amd_llvm_info_json=amd_info())
    before = read_pin_set(base.get)
    bumped = read_pin_set({**base, "cmake/amd-llvm-info.json": json.dumps(amd_info(ROCM))}.get)
    [change] = pin_set_changes(before, bumped)
    assert (change.name, change.kind) == ("amd", BUMP)
    assert change.describe() == f"bumps the AMD LLVM (llvm/llvm-project) from {AMD[:12]} to {ROCM[:12]}"
    assert change.to_dict()["new"]["commit"] == ROCM
    rebuilt = read_pin_set({**base, "cmake/amd-llvm-info.json": json.dumps(amd_info(build=2))}.get)
    assert [(c.name, c.kind) for c in pin_set_changes(before, rebuilt)] == [("amd", PREBUILT)]
    # the commit that made the AMD backend pin its own LLVM, and its undoing
    core_only = read_pin_set(files().get)
    assert [(c.name, c.kind) for c in pin_set_changes(core_only, before)] == [("amd", ADDED)]
    assert "before, the backend used the core LLVM" in pin_set_changes(core_only, before)[0].describe()
    assert [(c.name, c.kind) for c in pin_set_changes(before, core_only)] == [("amd", REMOVED)]
    # a core bump and a toolchain move in one commit: both, core first
    moved = files(cmake__llvm_info_json={"llvm_hash": "b" * 40, "build_number": 1},
                  cmake__nvidia_toolchain_version_json={"ptxas": "12.9.86"})
    changes = pin_set_changes(core_only, read_pin_set(moved.get))
    assert [(c.name, c.kind) for c in changes] == [("core", BUMP), ("toolchain", TOOLCHAIN)]
    assert changes[1].describe() == "moves the NVIDIA toolchain (cmake/nvidia-toolchain-version.json): ptxas none -> 12.9.86"
    # the pin moving from llvm-hash.txt to llvm-info.json is no bump
    hashed = read_pin_set({"cmake/llvm-hash.txt": CORE_FORK + "\n"}.get)
    info = read_pin_set({"cmake/llvm-info.json": json.dumps({"llvm_hash": CORE_FORK, "build_number": 1})}.get)
    assert [(c.name, c.kind) for c in pin_set_changes(hashed, info)] == [("core", FORMAT)]


@pytest.mark.parametrize("path,text,words", [
    ("cmake/amd-llvm-info.json", "{", "cmake/amd-llvm-info.json is not valid JSON"),
    ("cmake/amd-llvm-info.json", '{"build_number": 1}', 'cmake/amd-llvm-info.json has no "llvm_hash"'),
    ("cmake/amd-llvm-build-info.json", "[", "cmake/amd-llvm-build-info.json is not valid JSON"),
    ("cmake/nvidia-toolchain-version.json", '["12.8"]', "not a JSON object"),
])
def test_an_unreadable_pin_file_is_one_line(path, text, words):
    tree = {**files(cmake__amd_llvm_info_json=amd_info()), path: text}
    with pytest.raises(PinError) as exc:
        read_pin_set(tree.get)
    assert words in str(exc.value) and "\n" not in str(exc.value)
