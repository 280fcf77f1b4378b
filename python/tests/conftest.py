"""Finds the C library for the tests: $MGPU_LIBRARY, else the repository's build/libmgpukernels.so,
else the installed libmgpukernels.so.0. Puts the package from this tree first on sys.path unless
MGPU_TEST_INSTALLED=1 (test an installed package)."""
import os
import pathlib
import sys

REPO = pathlib.Path(__file__).resolve().parents[2]

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # JAX beside PyTorch on one GPU

if os.environ.get("MGPU_TEST_INSTALLED") != "1":
    sys.path.insert(0, str(REPO / "python"))
if not os.environ.get("MGPU_LIBRARY"):
    built = REPO / "build" / "libmgpukernels.so"
    if built.exists():
        os.environ["MGPU_LIBRARY"] = str(built)
