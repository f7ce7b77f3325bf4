"""Coverage program: torch.compile artifacts shipped as a mega-cache. The program runs on caches
of its own, empty at each start; when the artifacts file beside the Inductor cache folder of its
environment exists it loads it first (torch.compiler.load_cache_artifacts), else it saves one
after compiling. Saves the output (argv[1])."""
import os
import tempfile

ART = os.path.join(os.path.dirname(os.path.abspath(os.environ.get("TORCHINDUCTOR_CACHE_DIR") or tempfile.mkdtemp())),
                   "megacache.bin")
_fresh = tempfile.mkdtemp(prefix="megacache-run-")
os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(_fresh, "inductor")
os.environ["TRITON_CACHE_DIR"] = os.path.join(_fresh, "triton")

import torch  # noqa: E402
from _common import device, save  # noqa: E402

loaded = False
if os.path.exists(ART):
    with open(ART, "rb") as fh:
        loaded = torch.compiler.load_cache_artifacts(fh.read()) is not None


@torch.compile
def fn(x, w):
    return torch.tanh(x @ w).sum(-1) * x.mean(-1)


dev = device()
torch.manual_seed(0)
x = torch.randn(64, 96, device=dev)
w = torch.randn(96, 96, device=dev)
out = fn(x, w)
if not loaded:
    saved = torch.compiler.save_cache_artifacts()
    if saved is not None:
        os.makedirs(os.path.dirname(ART), exist_ok=True)
        with open(ART + ".tmp", "wb") as fh:
            fh.write(saved[0])
        os.replace(ART + ".tmp", ART)
print("mega-cache", "loaded" if loaded else "saved")
save({"out": out})
