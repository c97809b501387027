"""How tests launch iobench (and IOR) under mpirun, and read what it says."""
import json
import os
import shutil
import subprocess

# For runs where every rank exits by itself at the same point (bad input: all parse, agree, print
# and finalize): once a rank exits non-zero, mpirun SIGTERMs the others and waits this long
# (default 1 s) before SIGKILL, though all have exited. Not for runs where ranks fail apart: 0
# kills a rank still writing (tests/test_iobench_errors.py::test_disk_full lost its JSON).
BAD_INPUT_ENV = {"OMPI_MCA_odls_base_sigkill_timeout": "0"}


def mpirun_cmd(np: int) -> list:
    return ["mpirun", "-np", str(np), "--oversubscribe"]


def run(iobench: str, args, np: int = 2, timeout: float = 300, env=None):
    """Run iobench under mpirun; returns (CompletedProcess, parsed JSON from stdout or None)."""
    cmd = mpirun_cmd(np) + [iobench] + [str(a) for a in args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, **(env or {})))
    doc = None
    if proc.stdout.strip():
        try:
            doc = json.loads(proc.stdout)
        except json.JSONDecodeError:
            doc = None
    return proc, doc


def ior_binary():
    """IOR's binary: $IOR_ROOT/bin/ior, else `ior` on PATH; None when there is none."""
    root = os.environ.get("IOR_ROOT")
    path = os.path.join(root, "bin", "ior") if root else shutil.which("ior")
    return path if path and os.access(path, os.X_OK) else None


def iobench_error_lines(stderr: str) -> list:
    """iobench's own stderr lines (mpirun adds its own banner when a rank exits non-zero)."""
    return [line for line in stderr.splitlines() if line.startswith("iobench")]
