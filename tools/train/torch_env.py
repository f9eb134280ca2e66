"""Torch as the trainer runs it here: Debian's python3-torch (CPU) on as many intra-op threads as
this process may use (Debian's build starts with one), and a check that its BLAS calls go to
OpenBLAS. Debian's torch is built against the generic libblas.so.3, which the alternatives system
points at OpenBLAS (libopenblas0-pthread) or at the reference BLAS (libblas3), about 3x slower
here; `bash scripts/install-deps.sh --train` installs OpenBLAS and selects it."""

import os
import sys

# libgomp's threads spin while they wait for work (OMP_WAIT_POLICY=ACTIVE by default). On a machine
# whose two cores are shared with other jobs a spinning thread holds a core the other one needs:
# a training step of the e256-l4 shape took 14-21 s with 2 spinning threads against 4.4-5.3 s with
# passive ones (load average ~5.5). Must be set before torch loads libgomp: import this module first.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

SKIP = 77  # ctest's SKIP_RETURN_CODE for the trainer's tests


def import_torch_or_skip():
    """For the tests: torch, or exit 77 (reported as skipped) when Debian's python3-torch is missing."""
    try:
        import torch  # noqa: F401
        import numpy  # noqa: F401
    except ImportError as e:
        print("SKIPPED: %s (install python3-torch python3-numpy: bash scripts/install-deps.sh --train)" % e)
        sys.exit(SKIP)
    return torch


def cores():
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def blas_library():
    """The BLAS shared object this process has mapped after a matrix product (None if none is)."""
    import torch
    torch.ones(64, 64) @ torch.ones(64, 64)
    libs = set()
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                path = line.split()[-1] if len(line.split()) >= 6 else ""
                if "blas" in os.path.basename(path):
                    libs.add(os.path.realpath(path))
    except OSError:
        return None
    for lib in sorted(libs):
        if "openblas" in lib:
            return lib
    return sorted(libs)[0] if libs else None


def setup(threads=0, quiet=False):
    """Intra-op threads = threads or the usable cores; warns when the BLAS is not OpenBLAS."""
    import torch
    n = threads if threads and threads > 0 else cores()
    torch.set_num_threads(n)
    lib = blas_library()
    if not quiet:
        print("torch %s, %d threads, BLAS %s" % (torch.__version__, torch.get_num_threads(), lib), file=sys.stderr)
    if lib is not None and "openblas" not in lib:
        print("WARNING: torch's BLAS is %s, not OpenBLAS (about 3x slower here): run\n"
              "         bash scripts/install-deps.sh --train" % lib, file=sys.stderr)
    return n
