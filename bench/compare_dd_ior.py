#!/usr/bin/env python3
"""Compare iobench with dd and (when `ior` is on PATH) IOR on the same filesystem and bytes.

Per API, runs are interleaved (order reversed every repetition, sync + a settle pause before each run)
so load drifts hit all tools alike, and the ratio of medians is printed. Bandwidth in MiB/s (2^20 bytes/s), aggregate over ranks.

  dd:     NP concurrent `dd bs=4M conv=fdatasync` writers (one file each, wall time of the slowest);
          read after dropping the files' pages with posix_fadvise(DONTNEED) (python os.posix_fadvise),
          NP concurrent `dd of=/dev/null bs=4M`.
  IOR:    write phase `-w -k -e` (fsync before close), then the same posix_fadvise drop, then a separate
          `-r` run: IOR itself does not defeat the page cache on one node.
  iobench: posix fpp <-> IOR -a POSIX -F; mpiio collective <-> IOR -a MPIIO -c; hdf5 collective <->
          IOR -a HDF5 -c (IOR -e in all three).

Usage: bench/compare_dd_ior.py --iobench build/iobench --dir /scratch/x [--size 512] [--np 2] [--reps 3]
"""
import argparse
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

MiB = 2 ** 20
APIS = {  # name: (iobench backend, mode, IOR args)
    "posix": ("posix", "fpp", ["-a", "POSIX", "-F"]),
    "mpiio": ("mpiio", "collective", ["-a", "MPIIO", "-c"]),
    "hdf5": ("hdf5", "collective", ["-a", "HDF5", "-c"]),
}


def mpirun(np_):
    return ["mpirun", "-np", str(np_), "--oversubscribe"]


def drop_cache(paths):
    for p in paths:
        fd = os.open(p, os.O_RDONLY)
        try:
            os.fdatasync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def run_iobench(a, backend, mode):
    cmd = mpirun(a.np) + [a.iobench, "--backend", backend, "--mode", mode, "--size", str(a.size),
                          "--dir", a.dir, "--name", "cmp_iobench", "--param", f"halo={a.halo}"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"iobench failed: {' '.join(cmd)}\n{proc.stderr}")
    rep = json.loads(proc.stdout)["repetitions"][0]
    return rep["write"]["bw_MiBps"], rep["read"]["bw_MiBps"]


def xfer_size(per_rank, cap):
    """Largest power-of-two transfer <= cap dividing the per-rank bytes (IOR and dd need a divisor)."""
    x = cap
    while per_rank % x:
        x //= 2
    return x


def ior_once(a, ior_args, phase, out_json):
    per_rank = a.size ** 3 * 8
    # posix: 4 MiB calls, like iobench's pwritev batches; MPI-IO/HDF5: one call per rank, like iobench
    xfer = xfer_size(per_rank, 4 * MiB if "-F" in ior_args else 1 << 30)
    cmd = mpirun(a.np) + [a.ior] + ior_args + ["-e", "-b", str(per_rank), "-t", str(xfer),
                                               "-o", os.path.join(a.dir, "cmp_ior.dat"),
                                               "-O", "summaryFormat=JSON", "-O", f"summaryFile={out_json}"]
    cmd += ["-w", "-k"] if phase == "write" else ["-r", "-k"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"IOR failed: {' '.join(cmd)}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    with open(out_json) as f:
        res = json.load(f)["tests"][0]["Results"]
    res = res[0] if isinstance(res[0], list) else res
    return res[0]["bwMiB"]


def run_ior(a, ior_args, tmp):
    w = ior_once(a, ior_args, "write", os.path.join(tmp, "w.json"))
    files = glob.glob(os.path.join(a.dir, "cmp_ior.dat*"))
    drop_cache(files)
    r = ior_once(a, ior_args, "read", os.path.join(tmp, "r.json"))
    for f in files:
        os.unlink(f)
    return w, r


def run_dd(a):
    per_rank = a.size ** 3 * 8
    files = [os.path.join(a.dir, f"cmp_dd.{i}") for i in range(a.np)]
    bs = xfer_size(per_rank, 4 * MiB)
    count = per_rank // bs
    nbytes = per_rank * a.np

    def parallel(cmds):
        t0 = time.perf_counter()
        procs = [subprocess.Popen(c, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) for c in cmds]
        for p in procs:
            if p.wait() != 0:
                sys.exit(f"dd failed: {p.stderr.read().decode()}")
        return nbytes / (time.perf_counter() - t0) / MiB

    w = parallel([["dd", "if=/dev/zero", f"of={f}", f"bs={bs}", f"count={count}", "conv=fdatasync"]
                  for f in files])
    drop_cache(files)
    r = parallel([["dd", f"if={f}", "of=/dev/null", f"bs={bs}"] for f in files])
    for f in files:
        os.unlink(f)
    return w, r


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--iobench", default="build/iobench")
    ap.add_argument("--ior", default=shutil.which("ior"))
    ap.add_argument("--dir", required=True, help="directory on the filesystem under test")
    ap.add_argument("--size", type=int, default=512, help="benchio edge n: n^3*8 bytes per rank (512: 1 GiB)")
    ap.add_argument("--np", type=int, default=2)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--apis", default="posix,mpiio,hdf5")
    ap.add_argument("--settle", type=float, default=5.0, help="seconds of quiet (after sync) before each run")
    ap.add_argument("--halo", type=int, default=0, choices=(0, 1),
                    help="benchio halo: 0 (default) = packed buffer like IOR's, so only the I/O path differs")
    a = ap.parse_args()
    if not os.path.isdir(a.dir):
        sys.exit(f"compare_dd_ior: error: --dir is not a directory '{a.dir}'")
    os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    listed = subprocess.run([a.iobench, "--list"], capture_output=True, text=True, check=True).stdout
    have = {line.split()[0] for line in listed.split("\n\n", 1)[0].splitlines() if line.strip()}
    apis = [x for x in a.apis.split(",") if APIS[x][0] in have]
    print(f"# {a.np} ranks x {a.size ** 3 * 8 / MiB:.0f} MiB, benchio halo={a.halo}, dir {a.dir}, "
          f"{a.reps} interleaved reps; "
          f"IOR: {a.ior or 'not found'}; MiB/s, medians")
    samples = {}  # (tool, api, phase) -> [MiB/s]

    def add(tool, api, wr):
        for phase, v in zip(("write", "read"), wr):
            samples.setdefault((tool, api, phase), []).append(v)

    def settle():
        # deleting GiBs of just-written files leaves journal/extent work that slows the next run: let it
        # finish so no tool pays for its predecessor
        os.sync()
        time.sleep(a.settle)

    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(a.reps):
            jobs = [("dd", "-", lambda: run_dd(a))]
            for api in apis:
                backend, mode, ior_args = APIS[api]
                jobs.append(("iobench", api, lambda b=backend, m=mode: run_iobench(a, b, m)))
                if a.ior:
                    jobs.append(("ior", api, lambda x=ior_args: run_ior(a, x, tmp)))
            # alternate the order every repetition, so no tool always follows the same one
            for tool, api, fn in (jobs if rep % 2 == 0 else jobs[::-1]):
                settle()
                add(tool, api, fn())
            print(f"# rep {rep} done", flush=True)

    med = {k: statistics.median(v) for k, v in samples.items()}
    print(f"{'api':6} {'phase':5} {'iobench':>9} {'ior':>9} {'dd':>9} {'iob/ior':>8} {'iob/dd':>7}  samples")
    for api in apis:
        for phase in ("write", "read"):
            i, r, d = med[("iobench", api, phase)], med.get(("ior", api, phase)), med[("dd", "-", phase)]
            raw = " ".join(f"{t}:{','.join(f'{x:.0f}' for x in samples.get((t, api if t != 'dd' else '-', phase), []))}"
                           for t in ("iobench", "ior", "dd"))
            print(f"{api:6} {phase:5} {i:9.1f} {r if r else float('nan'):9.1f} {d:9.1f} "
                  f"{(i / r) if r else float('nan'):8.3f} {i / d:7.3f}  {raw}")


if __name__ == "__main__":
    main()
