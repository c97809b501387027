"""SIONlib backend: real MPI runs (2 ranks, 32 KiB per rank) writing one container file; round trips
per mode with every element verified, the merged layout of collectivemerge split back by rank,
multi-block chunks, corruption caught, bad input, and a container read with the wrong rank count.
Skipped, with the reason, when iobench was built without SIONlib (no sionconfig, no SIONLIB_ROOT)."""
import json
import os
import re
import shutil
import struct
import subprocess

import pytest

from tests.support.launch import iobench_error_lines

SIZE = 16                      # 16^3 doubles = 32 KiB per rank
NP = 2
PER_RANK = SIZE ** 3 * 8
MODES = ["independent", "collective", "collectivemerge"]


@pytest.fixture(autouse=True)
def need_sionlib(iobench_backends):
    if "sionlib" not in iobench_backends:
        pytest.skip("iobench built without SIONlib: set SIONLIB_ROOT to a SIONlib 1.7 install "
                    "(its bin/sionconfig) or put sionconfig on PATH, then rebuild iobench")


def base(tmp_path, mode, *extra):
    return ["--backend", "sionlib", "--mode", mode, "--size", SIZE, "--dir", tmp_path, *extra]


def siondump(path):
    """siondump's summary of a container, or None when the tool is not around."""
    root = os.environ.get("SIONLIB_ROOT")
    exe = shutil.which("siondump") or (root and os.path.join(root, "bin", "siondump"))
    if not exe or not os.access(exe, os.X_OK):
        return None
    return subprocess.run([exe, "-a", str(path)], capture_output=True, text=True, check=True).stdout


@pytest.mark.parametrize("mode", MODES)
def test_round_trip(mode, run_iobench, tmp_path):
    # collsize=2: both ranks in one collector group, so the collective modes really collect/merge
    extra = ["--param", "collsize=2"] if mode != "independent" else []
    proc, doc = run_iobench(base(tmp_path, mode, *extra))
    assert proc.returncode == 0, proc.stderr
    assert doc["status"] == "ok" and doc["verify"] is True
    assert doc["library_versions"]["sionlib"].startswith("1.7")
    assert doc["sync_method"] == "fsync of container after sion_parclose_mpi"
    hints = doc["hints_in_effect"]
    want = "bw,posix" + {"independent": "", "collective": ",collective,collsize=2",
                         "collectivemerge": ",collective,collectivemerge,collsize=2"}[mode]
    assert hints["file_mode_write"] == want          # posix: Darshan's POSIX module sees the I/O
    assert int(hints["fsblksize"]) > 0               # what SIONlib detected
    (rep,) = doc["repetitions"]
    for phase in ("write", "read"):
        assert rep[phase]["bytes"] == NP * PER_RANK and rep[phase]["bw_MiBps"] > 0
    assert rep["read"]["verified"] is True
    if doc["fs_type"] != "tmpfs":
        assert rep["read"]["cache_resident_before_read"] <= 0.05
    assert list(tmp_path.iterdir()) == [], "the container must be deleted without --keep"


def test_collectivemerge_container_holds_merged_chunk(run_iobench, tmp_path):
    proc, doc = run_iobench(base(tmp_path, "collectivemerge", "--param", "collsize=2", "--keep"))
    assert proc.returncode == 0, proc.stderr
    (container,) = doc["repetitions"][0]["files"]
    # metadata was written at close and synced: the whole payload is in the file
    assert os.path.getsize(container) >= NP * PER_RANK
    dump = siondump(container)
    if dump is None:
        pytest.skip("siondump not found (SIONLIB_ROOT/bin): layout not inspected")
    # the collector's chunk holds both blocks, the sender's chunk is empty
    counts = dict(re.findall(r"size of (full|empty) chunks:.*#\s+(\d+)", dump))
    assert counts == {"full": "1", "empty": "1"}, dump


def test_multi_block_chunks(run_iobench, tmp_path):
    """chunksize below the rank's block: SIONlib spreads it over several blocks; the reads cross them."""
    proc, doc = run_iobench(base(tmp_path, "independent", "--param", "chunksize=5000", "--keep"))
    assert proc.returncode == 0, proc.stderr
    assert doc["repetitions"][0]["read"]["verified"] is True
    dump = siondump(doc["repetitions"][0]["files"][0])
    if dump is not None:
        assert int(re.search(r"number of blocks:\s+(\d+)", dump).group(1)) > 1, dump


def test_corrupted_container_fails_verification(run_iobench, tmp_path):
    args = base(tmp_path, "collectivemerge", "--param", "collsize=2", "--keep")
    proc, doc = run_iobench(args + ["--phase", "write"])
    assert proc.returncode == 0, proc.stderr
    container = doc["repetitions"][0]["files"][0]
    g = NP * SIZE ** 3 - 7                           # rank 1's block, stored in rank 0's merged chunk
    data = bytearray(open(container, "rb").read())
    needle = struct.pack("<d", float(g + 1))
    at = data.find(needle)
    assert at >= 0 and data.find(needle, at + 1) < 0
    data[at] ^= 0x01
    open(container, "wb").write(bytes(data))
    proc, doc = run_iobench(args + ["--phase", "read"])
    assert proc.returncode == 1
    assert doc["status"] == "failed" and f"global index {g}" in doc["error"]
    assert "bw_MiBps" not in json.dumps(doc)


@pytest.mark.parametrize("param,value", [("chunksize", "0"), ("chunksize", "-4"),
                                         ("chunksize", str(1 << 60)), ("fsblksize", "abc"),
                                         ("collsize", "3")])
def test_bad_params(param, value, run_iobench, tmp_path):
    proc, doc = run_iobench(base(tmp_path, "collective", "--param", f"{param}={value}"))
    assert proc.returncode == 2
    (line,) = iobench_error_lines(proc.stderr)
    assert line.startswith("iobench: error: ") and param in line and line.endswith(f"'{value}'")
    assert doc is None and list(tmp_path.iterdir()) == []


def test_collective_chunk_smaller_than_block(run_iobench, tmp_path):
    proc, doc = run_iobench(base(tmp_path, "collective", "--param", "chunksize=5000"))
    assert proc.returncode == 1
    assert "chunksize 5000 is smaller than this rank's block" in doc["error"]
    assert "bw_MiBps" not in json.dumps(doc) and list(tmp_path.iterdir()) == []


def test_read_with_other_rank_count_says_why(run_iobench, tmp_path):
    args = base(tmp_path, "collectivemerge", "--param", "collsize=2", "--keep")
    proc, _ = run_iobench(args + ["--phase", "write"])
    assert proc.returncode == 0, proc.stderr
    read = base(tmp_path, "collectivemerge", "--keep", "--phase", "read")  # collsize=2 is too big for 1 rank
    proc, doc = run_iobench(read, np=1)
    assert proc.returncode == 1
    assert "written by 2 tasks" in doc["error"] and "-np 2" in doc["error"]
    proc, doc = run_iobench(read)                       # the right count still reads it
    assert proc.returncode == 0, proc.stderr
    assert doc["repetitions"][0]["read"]["verified"] is True


@pytest.mark.parametrize("mode,pattern,extra", [
    ("collective", "hacc", ["--size", "1000", "--param", "layout=contiguous"]),
    ("collectivemerge", "nektar", ["--param", "case=small", "--param", "collsize=2"]),  # unequal blocks
])
def test_workload_patterns(mode, pattern, extra, run_iobench, tmp_path):
    args = ["--backend", "sionlib", "--mode", mode, "--pattern", pattern, "--dir", tmp_path, *extra]
    proc, doc = run_iobench(args, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert doc["status"] == "ok" and doc["repetitions"][0]["read"]["verified"] is True


def test_not_a_container_carries_sionlibs_message(run_iobench, tmp_path):
    (tmp_path / "iobench_sionlib_independent_benchio.rep0").write_bytes(bytes(range(256)) * 400)
    proc, doc = run_iobench(base(tmp_path, "independent", "--phase", "read", "--keep"))
    assert proc.returncode == 1
    # SIONlib's own words (it prints them on stderr only), after the call that failed
    assert doc["error"].startswith("sion_paropen_mpi(") and "not a sion file" in doc["error"], doc["error"]
    assert "bw_MiBps" not in json.dumps(doc)


def test_ior_pattern_writes_in_place(iobench, tmp_path):
    """Fair to SIONlib (issue 19): the ior pattern's variables are already one contiguous block, so
    sion_fwrite/sion_fread get that memory itself: nothing allocated or copied in the timed span. 128 MiB
    in one rank: its peak memory is the block once, not twice (before: a packed copy of it)."""
    import sys
    from tests.support.launch import mpirun_cmd
    args = ["--backend", "sionlib", "--pattern", "ior", "--param", "block=128m", "--dir", str(tmp_path)]
    probe = ("import resource, subprocess, sys; p = subprocess.run(sys.argv[1:], capture_output=True); "
             "print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    out = subprocess.run([sys.executable, "-c", probe] + mpirun_cmd(1) + [iobench] + args,
                         capture_output=True, text=True, timeout=300).stdout.split()
    assert int(out[0]) == 0
    assert 128 * 1024 < int(out[1]) < 192 * 1024, f"peak RSS {out[1]} KiB for a 128 MiB block"
    assert os.listdir(tmp_path) == []
