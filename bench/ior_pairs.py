#!/usr/bin/env python3
"""IOR against `iobench --pattern ior` with identical parameters: alternating pairs, median of per-pair ratios.

For each API (posix fpp/shared, mpiio independent/collective, hdf5 independent/collective) and rank
count, runs N pairs; in pair k the order is iobench-then-IOR for even k, IOR-then-iobench for odd k,
with `sync` and a settle pause before every run. IOR runs with offset stamps (`-l o`: one word per
4 KiB rewritten per transfer), the same per-transfer work as iobench's stamps (docs/ior.md). Figures
are the tools' own: iobench's JSON (`repetitions[0].<phase>.bw_MiBps`) and IOR's JSON summary
(`bwMiB`), both bytes over open -> access -> fsync -> close of the slowest rank, MiB/s (2^20 bytes/s).

Cache defeat and process structure are the same on both sides: each tool runs its write phase
(iobench `--phase write --keep`, IOR `-w -k -e`) and its read phase (iobench `--phase read`, IOR
`-r -k`) as separate processes with the same posix_fadvise(DONTNEED) drop of the files in between
(drop_cache below); iobench's read run drops the kept files' pages itself too
and records what stayed resident. IOR does not defeat the page cache on one node by itself.

Modes: on this machine (a VM) one command's write or read can land at ~1500 or ~400 MiB/s, for both
tools: the guest reports freed memory to the host (virtio_balloon free page reporting, ~2 s after
the pages are freed) and page cache placed on reported pages pays a host fault per page. Which mode
a run hits depends on when the previous run freed its pages. `--warm MiB` touches and frees that much
memory right before each tool process (outside both tools' timing) so that both tools' page cache
lands on host-backed memory (docs/ior.md, "By hand"). Each line also shows how many
of each tool's samples fall into the fast mode (`fast a/b`: samples above the widest gap, when that
gap is a factor > 1.6 between neighbours in the sorted samples of both tools; "one mode" otherwise)
and the median ratio over the pairs in which both tools landed in the same mode (`same-mode`, with
the number of such pairs).

Usage: python3 -m bench.ior_pairs --iobench build/iobench --ior /opt/ior/bin/ior --dir /scratch/x
           [--block 128m] [--transfer 1m] [--segments 2] [--ranks 1,2] [--pairs 5]
           [--apis posix:fpp,mpiio:collective,...] [--settle S] [--warm MiB] [--json out.json]
           [--slurm-nodes N [--partition cluster]]   # srun over N nodes (ci/slurm/start.sh --nodes N)
           [--control]                               # A/A: IOR in both slots
       python3 -m bench.ior_pairs --pool run1.json run2.json ...
Prints one line per (api, ranks, phase): medians, the median of the per-pair ratios, the modes, a
90 % confidence interval of that median with what it allows ("within" ±5 %, "differs" from 1, or
"unresolved" at this many pairs), and every pair. `--control` runs IOR in iobench's slot too (on a
file of its own): how far from 1 the bench's ratio lands when nothing differs (docs/ior.md).
`--pool` reads the `--json` files of several runs with the same sizes and prints, per line, the
median of the per-pair ratios of all their pairs, its interval, and how many lines fall within ±5 %.
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

# one mapping iobench backend:mode -> IOR's arguments, shared with the IOR check
from iobench_lib.ior_pairs import IOR_API as IOR_ARGS, IOR_PACKET

#: how ranks start: mpirun on this host, or srun over N nodes of a Slurm partition (--slurm-nodes)
SLURM = {"nodes": 0, "partition": "cluster"}
#: OpenMPI across the namespaced nodes of ci/slurm/start.sh --nodes N: TCP over its bridge only
SLURM_MPI_ENV = {"OMPI_MCA_btl": "self,vader,tcp", "OMPI_MCA_btl_tcp_if_include": "10.219.19.0/24",
                 "OMPI_MCA_btl_tcp_disable_family": "6", "SLURM_MPI_TYPE": "pmix"}


def mpirun(np_):
    return ["mpirun", "-np", str(np_), "--oversubscribe"]


def drop_cache(paths):
    """Write the files' dirty pages out, then drop their page cache (posix_fadvise DONTNEED)."""
    for p in paths:
        fd = os.open(p, os.O_RDONLY)
        try:
            os.fdatasync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def run_tool(cmd):
    """Run one tool process. On the namespaced cluster Open MPI 4.1's TCP BTL now and then crashes
    inside MPI_Init (SIGSEGV, a NULL callback under mca_btl_tcp.so in opal_progress; IOR and iobench
    alike, before either starts timing): such a launch is run once more and said so on stderr."""
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0 and SLURM["nodes"] and "Segmentation fault" in proc.stderr:
        print(f"# retried after a crash at launch: {' '.join(cmd[:8])} ...", file=sys.stderr, flush=True)
        proc = subprocess.run(cmd, capture_output=True, text=True)
    return proc


def launch(np_):
    if not SLURM["nodes"]:
        return mpirun(np_)
    # -K: a rank that dies ends the step (else the others wait in MPI for ever)
    return ["srun", "-K", "-p", SLURM["partition"], "-N", str(SLURM["nodes"]), "-n", str(np_), "-m", "block"]


def ior_command(ior, api, np_, block, transfer, segments, path, phase, summary):
    """The IOR command line for one phase (write: -w -k -e; read: -r -k -C), offset stamps (-l o).
    -C: each rank reads the block of the rank one node further (shift = tasks on node 0; none on one
    node), as iobench's read placement does (docs/CONTRACT.md §2)."""
    return (launch(np_) + [ior] + IOR_ARGS[api] +
            ["-b", block, "-t", transfer, "-s", str(segments), "-e"] + IOR_PACKET + ["-o", path,
             "-O", "summaryFormat=JSON", "-O", f"summaryFile={summary}"] +
            (["-w", "-k"] if phase == "write" else ["-r", "-k", "-C"]))


def iobench_command(iobench, api, np_, block, transfer, segments, dirname, phase):
    """iobench with IOR's sizes, one phase per process like IOR's (write keeps the file)."""
    backend, mode = api.split(":")
    return (launch(np_) + [iobench, "--backend", backend, "--mode", mode, "--pattern", "ior",
                           "--param", f"block={block}", "--param", f"transfer={transfer}",
                           "--param", f"segments={segments}", "--dir", dirname,
                           "--name", "pair_iobench", "--repeat", "1", "--verify", "--phase", phase] +
            (["--keep"] if phase == "write" else []))


def warm_memory(mib):
    """Touch and free `mib` MiB right before a tool's process starts (outside its timing). This VM
    reports free memory to its host (virtio_balloon free page reporting, ~2 s after pages are freed),
    and page cache placed on reported pages pays a host fault per page: the same command then runs
    at ~400 instead of ~1500 MiB/s. Freshly freed pages are reused first, so both tools' page cache
    lands on host-backed memory. 0: off."""
    if mib > 0:
        import numpy as np
        buf = np.ones(mib << 20, dtype=np.uint8)   # every page written
        del buf


def iobench_phase(a, api, np_, phase):
    warm_memory(a.warm)
    cmd = iobench_command(a.iobench, api, np_, a.block, a.transfer, a.segments, a.dir, phase)
    proc = run_tool(cmd)
    if proc.returncode != 0:
        sys.exit(f"iobench failed: {' '.join(cmd)}\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout)["repetitions"][0][phase]


def run_iobench(a, api, np_):
    """Write (kept), the same drop as IOR gets, read (iobench drops the kept files' pages itself
    too and records what stayed resident), as two processes like IOR's -w and -r runs."""
    w = iobench_phase(a, api, np_, "write")
    drop_cache(glob.glob(os.path.join(a.dir, "pair_iobench.rep0*")))
    r = iobench_phase(a, api, np_, "read")   # deletes the files (no --keep)
    return w["bw_MiBps"], r["bw_MiBps"], r["cache_resident_before_read"]


def ior_phase(a, api, np_, phase, tmp, name="pair_ior.dat"):
    warm_memory(a.warm)
    summary = os.path.join(tmp, f"{phase}.json")
    cmd = ior_command(a.ior, api, np_, a.block, a.transfer, a.segments,
                      os.path.join(a.dir, name), phase, summary)
    proc = run_tool(cmd)
    if proc.returncode != 0:
        sys.exit(f"IOR failed: {' '.join(cmd)}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    with open(summary) as f:
        res = json.load(f)["tests"][0]["Results"]
    res = res[0] if isinstance(res[0], list) else res
    return res[0]["bwMiB"]


def run_ior(a, api, np_, tmp, name="pair_ior.dat"):
    w = ior_phase(a, api, np_, "write", tmp, name)
    files = glob.glob(os.path.join(a.dir, name + "*"))
    drop_cache(files)
    r = ior_phase(a, api, np_, "read", tmp, name)
    for f in files:
        os.unlink(f)
    return w, r


TOLERANCE = 0.05  # the ±5 % of issue 19
CI_LEVEL = 0.90


# the distribution-free interval of the median per-pair ratio, shared with `python -m gate`
from gate.pairs import median_ci  # noqa: E402


def judge_ratio(ratios):
    """'within' (the CI lies inside 1 +- TOLERANCE), 'differs' (the CI excludes 1), or
    'unresolved' (the CI holds 1 and reaches beyond the tolerance: more pairs, or a quieter machine,
    would be needed to say); with the CI."""
    ci = median_ci(ratios)
    if ci is None:
        return "unresolved", ci
    lo, hi, _ = ci
    if 1 - TOLERANCE <= lo and hi <= 1 + TOLERANCE:
        return "within", ci
    return ("differs" if lo > 1 or hi < 1 else "unresolved"), ci


def ci_text(verdict, ci):
    return f"{verdict} [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else verdict


MODE_GAP = 1.6   # neighbours in the sorted samples further apart than this factor: two modes


def mode_threshold(values):
    """The value splitting two modes (the upper end of the widest gap), or None for one mode."""
    v = sorted(values)
    gaps = [(v[i + 1] / v[i], v[i + 1]) for i in range(len(v) - 1) if v[i] > 0]
    widest = max(gaps, default=(1.0, None))
    return widest[1] if widest[0] > MODE_GAP else None


def mode_summary(pairs_bw):
    """(fast counts 'a/b' or 'one mode', same-mode median ratio or None, n same-mode pairs)."""
    thr = mode_threshold([x for p in pairs_bw for x in p])
    if thr is None:
        return "one mode", statistics.median(a / b for a, b in pairs_bw), len(pairs_bw)
    fast = [(a >= thr, b >= thr) for a, b in pairs_bw]
    same = [a / b for (a, b), (fa, fb) in zip(pairs_bw, fast) if fa == fb]
    counts = f"fast {sum(f[0] for f in fast)}/{sum(f[1] for f in fast)}"
    return counts, (statistics.median(same) if same else None), len(same)


def pool(files):
    """Median per-pair ratio of every (api, ranks, phase) over the pairs of several runs."""
    ratios, sizes = {}, set()
    for name in files:
        with open(name) as f:
            run = json.load(f)
        sizes.add((run["block"], run["transfer"], run["segments"], run.get("control", False)))
        for s in run["samples"]:
            for i, phase in enumerate(("write", "read")):
                ratios.setdefault((s["api"], s["ranks"], phase), []).append(s["iobench"][i] / s["ior"][i])
    if len(sizes) != 1:
        sys.exit(f"ior_pairs: error: --pool runs differ in block/transfer/segments/control: {sorted(sizes)}")
    inside, verdicts = 0, {}
    print(f"# pooled {len(files)} runs, block {run['block']}, transfer {run['transfer']}, "
          f"segments {run['segments']}" + ("; A/A control" if run.get("control") else "")
          + f"; CI {CI_LEVEL:.0%} of the median ratio")
    for (api, np_, phase), r in ratios.items():
        med = statistics.median(r)
        inside += abs(med - 1) <= TOLERANCE
        verdict, ci = judge_ratio(r)
        verdicts[verdict] = verdicts.get(verdict, 0) + 1
        print(f"{api:18} {np_:2d} {phase:5} {med:6.3f} ({len(r)} pairs)  {ci_text(verdict, ci)}")
    print(f"{inside} of {len(ratios)} medians within {1 - TOLERANCE:.2f}-{1 + TOLERANCE:.2f}; CI: "
          + ", ".join(f"{v} {n}" for v, n in sorted(verdicts.items())))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pool", nargs="+", metavar="JSON", help="pool the --json files of earlier runs")
    ap.add_argument("--iobench", default="build/iobench")
    ap.add_argument("--ior", default=shutil.which("ior"))
    ap.add_argument("--dir")
    ap.add_argument("--block", default="128m")
    ap.add_argument("--transfer", default="1m")
    ap.add_argument("--segments", type=int, default=2)
    ap.add_argument("--ranks", default="1,2")
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--apis", default=",".join(IOR_ARGS))
    ap.add_argument("--settle", type=float, default=2.0, help="seconds of quiet after sync before each run")
    ap.add_argument("--warm", type=int, default=0,
                    help="MiB of memory to touch and free right before each tool process (see warm_memory)")
    ap.add_argument("--json", help="also write every sample here")
    ap.add_argument("--slurm-nodes", type=int, default=0,
                    help="launch with srun on this many nodes of --partition (block placement) instead of mpirun")
    ap.add_argument("--partition", default="cluster", help="Slurm partition for --slurm-nodes")
    ap.add_argument("--control", action="store_true",
                    help="A/A control: IOR in both slots (the 'iobench' column is IOR on another file): "
                         "how far from 1 the bench's ratio lands when nothing differs")
    a = ap.parse_args()
    SLURM.update(nodes=a.slurm_nodes, partition=a.partition)
    if a.slurm_nodes:
        for k, v in SLURM_MPI_ENV.items():
            os.environ.setdefault(k, v)
    if a.pool:
        return pool(a.pool)
    if not a.dir:
        ap.error("--dir is required")
    if not a.ior:
        sys.exit("ior_pairs: error: no IOR binary (--ior or ior on PATH) ''")
    os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    samples = []
    where = f"srun -N {a.slurm_nodes} -p {a.partition}" if a.slurm_nodes else "mpirun, this host"
    print(f"# block {a.block}, transfer {a.transfer}, segments {a.segments}, dir {a.dir}, {a.pairs} pairs, "
          f"settle {a.settle} s, warm {a.warm} MiB, {where}; MiB/s"
          + ("; A/A CONTROL: the iobench column is IOR too" if a.control else ""))
    print(f"{'api':18} {'np':>2} {'phase':5} {'iobench':>9} {'ior':>9} {'ratio':>6}  {'modes':>9} "
          f"{'same-mode':>11}  {f'CI {CI_LEVEL:.0%}':>26}  pairs (iobench/ior)")
    with tempfile.TemporaryDirectory() as tmp:
        for np_ in [int(x) for x in a.ranks.split(",")]:
            for api in a.apis.split(","):
                pairs = []
                for k in range(a.pairs):
                    got = {}
                    for tool in (("iobench", "ior") if k % 2 == 0 else ("ior", "iobench")):
                        os.sync()
                        time.sleep(a.settle)
                        if tool == "ior":
                            got[tool] = run_ior(a, api, np_, tmp)
                        elif a.control:     # A/A: IOR in iobench's slot too, on a file of its own
                            got[tool] = [*run_ior(a, api, np_, tmp, "pair_control.dat"), None]
                        else:
                            got[tool] = run_iobench(a, api, np_)
                    pairs.append(got)
                    samples.append({"api": api, "ranks": np_, "pair": k, "iobench": got["iobench"][:2],
                                    "iobench_resident": got["iobench"][2], "ior": got["ior"]})
                for i, phase in enumerate(("write", "read")):
                    mi = statistics.median(p["iobench"][i] for p in pairs)
                    mr = statistics.median(p["ior"][i] for p in pairs)
                    ratios = [p["iobench"][i] / p["ior"][i] for p in pairs]
                    ratio = statistics.median(ratios)
                    ci = ci_text(*judge_ratio(ratios))
                    raw = " ".join(f"{p['iobench'][i]:.0f}/{p['ior'][i]:.0f}" for p in pairs)
                    modes, same, n_same = mode_summary([(p["iobench"][i], p["ior"][i]) for p in pairs])
                    same_s = f"{same:.3f} ({n_same})" if same is not None else "- (0)"
                    print(f"{api:18} {np_:2d} {phase:5} {mi:9.1f} {mr:9.1f} {ratio:6.3f}  {modes:>9} "
                          f"{same_s:>11}  {ci:>26}  {raw}", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"block": a.block, "transfer": a.transfer, "segments": a.segments,
                       "control": a.control, "samples": samples}, f)


if __name__ == "__main__":
    main()
