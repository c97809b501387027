"""`iobench --pattern ior`: IOR's byte layout, every built backend read-back verified, bad sizes.

IOR's documented layout (github.com/hpc/ior, doc/USER_GUIDE, src/ior.c GetOffsetArraySequential):
rank r's transfer k of segment s lies at  O = s*(ranks*block) + r*block + k*transfer  in a shared file,
and at  s*block + k*transfer  in rank r's own file (-F). iobench stamps, as IOR's offset packets
(-l o), the first 8-byte word of each 4 KiB of a transfer: word j (j % 512 == 0) holds
O/8 + j + 1 (its shared-file offset / 8 + 1, in fpp files too); every other word holds -j. So a kept
file is checked here against the offsets the formula gives, per rank, segment and transfer, static
words included. When an IOR binary is there (IOR_ROOT or PATH) the offset and owner of every transfer
in IOR's own file (-l o: rank in the upper 32 bits, the offset in the lower 32 bits of its stamps)
are compared with iobench's too, and the HDF5 files' datasets with IOR's.
"""
import glob
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from bench import ior_pairs
from tests.support.launch import BAD_INPUT_ENV, ior_binary, mpirun_cmd

BLOCK, XFER, SEGS = 64 * 1024, 16 * 1024, 3
XW, STAMP_EVERY = XFER // 8, 512          # words per transfer; one stamp per 4 KiB
SIZES = ["--param", f"block={BLOCK // 1024}k", "--param", f"transfer={XFER // 1024}k",
         "--param", f"segments={SEGS}"]
IOR_PACKET = ["-l", "o"]                  # as reframe_checks/iobench_lib/ior_pairs.IOR_PACKET


def ior_args(backend, mode, tmp_path, *extra):
    return ["--backend", backend, "--mode", mode, "--pattern", "ior", *SIZES, "--dir", tmp_path, *extra]


def shared_offset(P, r, s, k):
    """IOR's shared-file byte offset of rank r's transfer k of segment s."""
    return s * P * BLOCK + r * BLOCK + k * XFER


def expected_transfer(P, r, s, k):
    """The words iobench writes in rank r's transfer k of segment s: stamps O/8 + j + 1 at j % 512 == 0,
    -j elsewhere."""
    j = np.arange(XW, dtype=np.int64)
    return np.where(j % STAMP_EVERY == 0, shared_offset(P, r, s, k) // 8 + j + 1, -j)


def layout_mismatches(data, P, rank=None):
    """(segment, rank, transfer) of every transfer of a kept file that does not hold the words IOR's
    offsets give: the shared file (rank None) or rank `rank`'s own file (fpp, s*block + k*transfer)."""
    bad = []
    for s in range(SEGS):
        for r in range(P) if rank is None else [rank]:
            for k in range(BLOCK // XFER):
                off = shared_offset(P, r, s, k) if rank is None else s * BLOCK + k * XFER
                if not np.array_equal(data[off // 8:off // 8 + XW], expected_transfer(P, r, s, k)):
                    bad.append((s, r, k))
    return bad


@pytest.mark.parametrize("np_", [1, 2])
def test_shared_file_is_iors_segment_major_layout(run_iobench, tmp_path, np_):
    proc, doc = run_iobench(ior_args("posix", "shared", tmp_path, "--keep", "--name", "lay"), np=np_)
    assert proc.returncode == 0, proc.stderr
    data = np.fromfile(tmp_path / "lay.rep0", dtype="<i8")
    assert data.size * 8 == SEGS * np_ * BLOCK == doc["file_size"]
    assert layout_mismatches(data, np_) == []
    stamps = np.arange(data.size) % STAMP_EVERY == 0     # stamps >= 1 exactly there, statics < 0
    assert (data[stamps] >= 1).all() and (data[~stamps] < 0).all()


def test_file_per_process_is_iors_layout(run_iobench, tmp_path):
    np_ = 2
    proc, doc = run_iobench(ior_args("posix", "fpp", tmp_path, "--keep", "--name", "lay"), np=np_)
    assert proc.returncode == 0, proc.stderr
    assert doc["file_layout"].startswith("file per process")
    for r in range(np_):
        data = np.fromfile(tmp_path / f"lay.rep0.{r}", dtype="<i8")
        assert data.size * 8 == SEGS * BLOCK
        assert layout_mismatches(data, np_, rank=r) == []
    other = np.fromfile(tmp_path / "lay.rep0.0", dtype="<i8")
    assert layout_mismatches(other, np_, rank=1) == [(s, 1, k) for s in range(SEGS) for k in range(BLOCK // XFER)]


def test_layout_check_names_swapped_and_altered_transfers(run_iobench, tmp_path):
    """The layout check can fail: two transfers swapped in a kept shared file, and one static word
    changed in a third, are named and nothing else."""
    np_ = 2
    proc, _ = run_iobench(ior_args("posix", "shared", tmp_path, "--keep", "--name", "sw"), np=np_)
    assert proc.returncode == 0, proc.stderr
    data = np.fromfile(tmp_path / "sw.rep0", dtype="<i8")
    a, b = shared_offset(np_, 0, 1, 2) // 8, shared_offset(np_, 1, 1, 2) // 8
    data[a:a + XW], data[b:b + XW] = data[b:b + XW].copy(), data[a:a + XW].copy()
    data[shared_offset(np_, 1, 2, 3) // 8 + 7] = -8
    assert layout_mismatches(data, np_) == [(1, 0, 2), (1, 1, 2), (2, 1, 3)]


def expected_shared_file(P):
    """Every word of the whole shared file, in file order."""
    return np.concatenate([expected_transfer(P, r, s, k) for s in range(SEGS) for r in range(P)
                           for k in range(BLOCK // XFER)])


@pytest.mark.parametrize("mode", ["independent", "collective"])
def test_mpiio_and_hdf5_files_hold_the_same_layout(run_iobench, iobench_backends, tmp_path, mode):
    np_ = 2
    proc, _ = run_iobench(ior_args("mpiio", mode, tmp_path, "--keep", "--name", "m"), np=np_)
    assert proc.returncode == 0, proc.stderr
    flat = np.fromfile(tmp_path / "m.rep0", dtype="<i8")
    assert np.array_equal(flat, expected_shared_file(np_))
    if "hdf5" not in iobench_backends or not shutil.which("h5dump"):
        pytest.skip("no hdf5 backend or no h5dump: HDF5 layout not inspected")
    proc, _ = run_iobench(ior_args("hdf5", mode, tmp_path, "--keep", "--name", "h"), np=np_)
    assert proc.returncode == 0, proc.stderr
    for s in range(SEGS):   # IOR's HDF5 layout: one 1-D int64 dataset per segment
        out = tmp_path / f"seg{s}.bin"
        subprocess.run(["h5dump", "-d", f"/Dataset-0000.{s:04d}", "-b", "LE", "-o", str(out),
                        str(tmp_path / "h.rep0")], check=True, capture_output=True)
        seg = np.fromfile(out, dtype="<i8")
        n = np_ * BLOCK // 8
        assert np.array_equal(seg, expected_shared_file(np_)[s * n:(s + 1) * n]), s


@pytest.mark.parametrize("backend, mode", [("adios2", "bp5"), ("adios2", "bp4"), ("sionlib", "independent"),
                                           ("sionlib", "collective")])
def test_whole_block_backends_write_the_same_words(run_iobench, iobench_backends, tmp_path, backend, mode):
    """adios2 and sionlib fill a whole-block buffer instead of one transfer buffer: each rank's block of
    each segment lands in their files with the same words as posix, mpiio and hdf5 write."""
    if mode not in iobench_backends.get(backend, []):
        pytest.skip(f"{backend} {mode} not built")
    np_ = 2
    proc, _ = run_iobench(ior_args(backend, mode, tmp_path, "--keep", "--name", "wb"), np=np_)
    assert proc.returncode == 0, proc.stderr
    kept = [open(f, "rb").read() for f in glob.glob(str(tmp_path / "**"), recursive=True) if os.path.isfile(f)]
    for s in range(SEGS):
        for r in range(np_):
            block = np.concatenate([expected_transfer(np_, r, s, k) for k in range(BLOCK // XFER)])
            assert any(block.astype("<i8").tobytes() in raw for raw in kept), (s, r)


def test_every_built_backend_reads_back_verified(run_iobench, iobench_backends, tmp_path):
    for backend, modes in sorted(iobench_backends.items()):
        for mode in modes:
            d = tmp_path / f"{backend}-{mode}"
            d.mkdir()
            proc, doc = run_iobench(ior_args(backend, mode, d, "--repeat", "2"), np=2)
            assert proc.returncode == 0, (backend, mode, proc.stderr)
            assert doc["status"] == "ok" and doc["pattern"] == "ior"
            assert (doc["block_size"], doc["transfer_size"], doc["segments"]) == (BLOCK, XFER, SEGS)
            assert doc["bytes_total"] == SEGS * 2 * BLOCK
            for rep in doc["repetitions"]:
                assert rep["write"]["bytes"] == rep["read"]["bytes"] == doc["bytes_total"]
                assert rep["read"]["verified"] is True
            assert list(d.iterdir()) == [], (backend, mode, list(d.iterdir()))


def test_size_defaults_block_from_size_in_mib(run_iobench, tmp_path):
    proc, doc = run_iobench(["--backend", "posix", "--pattern", "ior", "--size", "2", "--dir", tmp_path], np=1)
    assert proc.returncode == 0, proc.stderr
    assert (doc["block_size"], doc["transfer_size"], doc["segments"]) == (2 << 20, 1 << 20, 1)


@pytest.mark.parametrize("params, words", [
    (["block=96k", "transfer=64k"], "block must be a multiple of transfer"),
    (["block=0"], "--param block (bytes >= 1 and below 2^63, suffix k/m/g/t) '0'"),
    (["block=1m", "transfer=0"], "--param transfer (bytes >= 1 and below 2^63, suffix k/m/g/t) '0'"),
    (["block=1m", "segments=0"], "--param segments (an integer 1..2147483647) '0'"),
    (["block=1m", "transfer=12"], "multiple of 8 bytes"),
    (["block=4g", "transfer=1m", "segments=2147483647"], "overflows 2^63"),
    (["block=8388608t"], "below 2^63, suffix k/m/g/t) '8388608t'"),
    (["block=1x"], "--param block (bytes"),
    (["block=1m", "segments=2k"], "--param segments (an integer 1..2147483647) '2k'"),
])
def test_bad_sizes_one_line_exit_2_nothing_created(iobench, tmp_path, params, words):
    args = ["--backend", "posix", "--pattern", "ior", "--dir", str(tmp_path)]
    for p in params:
        args += ["--param", p]
    proc = subprocess.run(mpirun_cmd(2) + [iobench] + args, capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, **BAD_INPUT_ENV))
    assert proc.returncode == 2
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("iobench")]
    assert len(lines) == 1 and lines[0].startswith("iobench: error: ") and words in lines[0], proc.stderr
    assert proc.stdout == "" and list(tmp_path.iterdir()) == []


@pytest.mark.skipif(ior_binary() is None, reason="no IOR binary (IOR_ROOT or ior on PATH): "
                    "IOR's own files not compared")
@pytest.mark.parametrize("fpp", [False, True])
def test_offset_owner_and_stamps_of_every_transfer_match_iors_own_file(run_iobench, tmp_path, fpp):
    """IOR -l o (as the comparison runs it) stamps word i of a transfer at offset O, i % 512 == 0, with
    rank << 32 | (O * (i/512 + 1)) mod 2^32 (utilities.c update_write_memory_pattern); iobench stamps
    the same words. Per transfer, IOR's owner and offset must be iobench's."""
    np_ = 2
    mode = "fpp" if fpp else "shared"
    proc, _ = run_iobench(ior_args("posix", mode, tmp_path, "--keep", "--name", "iob"), np=np_)
    assert proc.returncode == 0, proc.stderr
    cmd = mpirun_cmd(np_) + [ior_binary(), "-a", "POSIX", "-b", str(BLOCK), "-t", str(XFER), "-s",
                             str(SEGS), *IOR_PACKET, "-w", "-k", "-o", str(tmp_path / "ior.dat")] + (
                                 ["-F"] if fpp else [])
    subprocess.run(cmd, check=True, capture_output=True, timeout=120)
    files = [(f"iob.rep0.{r}", f"ior.dat.{r:08d}") for r in range(np_)] if fpp else [("iob.rep0", "ior.dat")]
    for mine, theirs in files:
        a = np.fromfile(tmp_path / mine, dtype="<i8")
        b = np.fromfile(tmp_path / theirs, dtype="<u8")
        assert a.size == b.size
        shared = (a[::XW] - 1) * 8                                    # iobench: shared offset per transfer
        owner_iob = shared % (np_ * BLOCK) // BLOCK
        off_iob = shared // (np_ * BLOCK) * BLOCK + shared % BLOCK if fpp else shared   # offset in this file
        assert np.array_equal(owner_iob, (b[::XW] >> 32).astype(np.int64)), (mine, theirs)
        assert np.array_equal(off_iob, (b[::XW] & 0xFFFFFFFF).astype(np.int64)), (mine, theirs)
        i = np.arange(a.size)
        stamped = i % STAMP_EVERY == 0
        assert (a[stamped] >= 1).all() and (a[~stamped] < 0).all()    # iobench's stamps: the same words
        o = np.repeat(off_iob, XW)[stamped].astype(np.uint64)
        want = (o * (i[stamped] % XW // STAMP_EVERY + 1).astype(np.uint64)) & np.uint64(0xFFFFFFFF)
        assert np.array_equal(b[stamped] & np.uint64(0xFFFFFFFF), want), (mine, theirs)


def _word_offset(files, value):
    """(path, byte offset) of the one 8-byte little-endian word holding `value` among the kept files
    (a stamp: unique in the data, and checked to be unique in the files)."""
    hits = []
    for path in files:
        raw = np.fromfile(path, dtype=np.uint8)
        words = np.lib.stride_tricks.sliding_window_view(raw, 8)
        hits += [(path, int(h)) for h in
                 np.flatnonzero((words == np.frombuffer(np.int64(value).tobytes(), np.uint8)).all(axis=1))]
    assert len(hits) == 1, (value, hits[:5])
    return hits[0]


@pytest.mark.parametrize("word", [5, 512])           # a static word, a stamp
@pytest.mark.parametrize("backend, mode", [("posix", "shared"), ("posix", "fpp"), ("mpiio", "independent"),
                                           ("mpiio", "collective"), ("hdf5", "independent"),
                                           ("hdf5", "collective"), ("adios2", "bp5"),
                                           ("sionlib", "independent")])
def test_verify_checks_every_word_and_names_the_bad_transfer(run_iobench, iobench_backends, tmp_path, backend,
                                                             mode, word):
    """One transfer buffer (posix, mpiio, hdf5): the timed read looks at nothing (IOR -r), --verify (the
    default) re-reads the file through the backend and checks every word (IOR -R); whole-block
    backends (adios2, sionlib) compare their buffer after the read. Either names rank, segment,
    transfer and byte, for a changed stamp and a changed static word alike."""
    if mode not in iobench_backends.get(backend, []):
        pytest.skip(f"{backend} {mode} not built")
    np_, r, s, k = 2, 1, 2, 3
    proc, _ = run_iobench(ior_args(backend, mode, tmp_path, "--keep", "--name", "v", "--phase", "write"), np=np_)
    assert proc.returncode == 0, proc.stderr
    kept = [f for f in glob.glob(str(tmp_path / "**"), recursive=True) if os.path.isfile(f)]
    path, at = _word_offset(kept, int(expected_transfer(np_, r, s, k)[0]))   # the transfer's first stamp
    want = int(expected_transfer(np_, r, s, k)[word])
    with open(path, "r+b") as f:
        f.seek(at + 8 * word)
        assert np.frombuffer(f.read(8), "<i8")[0] == want
        f.seek(at + 8 * word)
        f.write(np.int64(-7).tobytes())
    proc, doc = run_iobench(ior_args(backend, mode, tmp_path, "--keep", "--name", "v", "--phase", "read",
                                     "--no-verify"), np=np_)
    assert proc.returncode == 0 and doc["repetitions"][0]["read"]["verified"] is False, proc.stderr
    proc, doc = run_iobench(ior_args(backend, mode, tmp_path, "--keep", "--name", "v", "--phase", "read",
                                     "--verify"), np=np_)
    assert proc.returncode == 1 and doc["status"] != "ok", proc.stderr
    msg = f"verify: ior rank {r} segment {s} transfer {k} byte {word * 8}: expected {want}, read -7"
    assert msg in doc["error"], doc["error"]


def test_a_rank_holds_one_transfer_buffer_not_its_blocks(iobench, tmp_path):
    """256 MiB per rank written and read back verified; the rank's peak memory stays far below it
    (one 1 MiB buffer as IOR's; before, it held all its segments*block bytes)."""
    args = ["--backend", "posix", "--mode", "fpp", "--pattern", "ior", "--param", "block=128m",
            "--param", "transfer=1m", "--param", "segments=2", "--dir", str(tmp_path), "--verify"]
    probe = ("import resource, subprocess, sys; p = subprocess.run(sys.argv[1:], capture_output=True); "
             "print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    out = subprocess.run([sys.executable, "-c", probe] + mpirun_cmd(1) + [iobench] + args,
                         capture_output=True, text=True, timeout=300).stdout.split()
    rc, peak_kib = int(out[0]), int(out[1])
    assert rc == 0
    assert peak_kib < 96 * 1024, f"peak RSS {peak_kib} KiB for 256 MiB per rank"


def test_bench_splits_two_modes_and_pairs_within_one():
    pairs = [(404, 1760), (1675, 409), (1559, 1564), (428, 1739), (1570, 1571)]
    counts, same, n = ior_pairs.mode_summary(pairs)
    assert counts == "fast 3/4" and n == 2 and same == pytest.approx((1559 / 1564 + 1570 / 1571) / 2)
    counts, same, n = ior_pairs.mode_summary([(1330, 1390), (1286, 1482), (1300, 1350)])
    assert counts == "one mode" and n == 3 and same == pytest.approx(1330 / 1390)   # median of all


def test_bench_ci_of_the_median_ratio_says_within_differs_or_unresolved():
    from scipy.stats import binom
    # n = 8 at 90 %: x(2)..x(7), coverage 1 - 2 P(B(8, 1/2) <= 1) = 0.930
    r = [0.90, 0.97, 0.98, 0.99, 1.00, 1.01, 1.03, 1.20]
    lo, hi, cov = ior_pairs.median_ci(r)
    assert (lo, hi) == (0.97, 1.03) and abs(cov - (1 - 2 * binom.cdf(1, 8, 0.5))) < 1e-12
    assert ior_pairs.judge_ratio(r)[0] == "within"
    # the same median with a wider spread cannot say +-5 %
    assert ior_pairs.judge_ratio([0.7, 0.8, 0.9, 0.99, 1.0, 1.1, 1.2, 1.4])[0] == "unresolved"
    # every pair above 1: a difference, whatever its size
    assert ior_pairs.judge_ratio([1.2, 1.25, 1.3, 1.3, 1.35, 1.4, 1.2, 1.28])[0] == "differs"
    # too few pairs for a 90 % interval: no claim
    assert ior_pairs.median_ci([1.0, 1.0, 1.0, 1.0]) is None
    assert ior_pairs.judge_ratio([1.0, 1.0, 1.0, 1.0])[0] == "unresolved"
    # coverage is never below the level asked, at every n the bench uses
    for n in range(5, 40):
        ci = ior_pairs.median_ci(list(range(n)))
        assert ci[2] >= ior_pairs.CI_LEVEL
