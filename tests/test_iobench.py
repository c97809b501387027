"""iobench round trips with real MPI runs (2 ranks, small sizes): JSON contract, layout of the kept
files, corruption detection, repetitions and phases."""
import json
import shlex
import shutil
import struct
import subprocess

import numpy as np
import pytest

SIZE = 16                          # 16^3 doubles = 32 KiB per rank
NP = 2
PER_RANK = SIZE ** 3 * 8
CASES = [("posix", "fpp"), ("posix", "shared"), ("mpiio", "independent"), ("mpiio", "collective"),
         ("hdf5", "independent"), ("hdf5", "collective")]
PHASE_KEYS = {"bytes", "open_s", "access_s", "sync_s", "close_s", "total_s", "bw_MiBps", "access_bw_MiBps"}


@pytest.fixture
def case(request, iobench_backends):
    backend, mode = request.param
    if backend not in iobench_backends:
        pytest.skip(f"backend {backend} not compiled into this iobench (see iobench --list)")
    return backend, mode


def data_files(d):
    return sorted(p for p in d.iterdir() if ".rep" in p.name)


@pytest.mark.parametrize("case", CASES, indirect=True, ids=lambda c: "-".join(c))
def test_round_trip(case, run_iobench, tmp_path):
    backend, mode = case
    args = ["--backend", backend, "--mode", mode, "--size", SIZE, "--dir", tmp_path]
    proc, doc = run_iobench(args)
    assert proc.returncode == 0, proc.stderr
    assert doc["schema"] == "iobench-result/1" and doc["status"] == "ok" and doc["error"] is None
    assert (doc["backend"], doc["mode"], doc["pattern"]) == (backend, mode, "benchio")
    assert shlex.split(doc["command"])[1:] == [str(a) for a in args]
    assert doc["ranks"] == NP and doc["nodes"] == 1 and len(doc["hosts"]) == 1
    assert doc["dims"] == [2, 1, 1]
    assert doc["local_size"] == [SIZE] * 3 and doc["global_size"] == [2 * SIZE, SIZE, SIZE]
    assert doc["bytes_per_rank"] == PER_RANK and doc["bytes_total"] == NP * PER_RANK
    assert doc["library_versions"]["iobench"] and doc["library_versions"]["mpi"].strip()
    if backend == "hdf5":
        assert doc["library_versions"]["hdf5"].count(".") == 2
    assert doc["sync_method"] == {"posix": "fsync", "mpiio": "MPI_File_sync",
                                  "hdf5": "H5Fflush+MPI_File_sync"}[backend]
    assert doc["cache_defeat"] == "posix_fadvise_dontneed" and doc["verify"] is True
    (rep,) = doc["repetitions"]
    assert rep["rep"] == 0
    assert len(rep["files"]) == (NP if mode == "fpp" else 1)
    for phase in ("write", "read"):
        p = rep[phase]
        assert PHASE_KEYS <= set(p)
        assert p["bytes"] == NP * PER_RANK
        # total is barrier to barrier on every rank, so its maximum bounds every component's maximum
        for comp in ("open_s", "access_s", "sync_s", "close_s"):
            assert 0 <= p[comp] <= p["total_s"]
        assert p["bw_MiBps"] == pytest.approx(p["bytes"] / p["total_s"] / 2**20, rel=1e-9)
        assert p["access_bw_MiBps"] == pytest.approx(p["bytes"] / p["access_s"] / 2**20, rel=1e-9)
        assert 0 < p["bw_MiBps"] < 50 * 1024   # loose sanity only: tiny files are latency-bound
    assert rep["read"]["sync_s"] == 0 and rep["read"]["verified"] is True
    if doc["fs_type"] != "tmpfs":          # tmpfs pages cannot be dropped: they are the file
        assert rep["read"]["cache_resident_before_read"] <= 0.05
    s = doc["summary"]["write"]["bw_MiBps"]
    assert s["min"] == s["median"] == s["max"] == rep["write"]["bw_MiBps"] and s["iqr"] == 0
    assert data_files(tmp_path) == [], "data files must be deleted without --keep"


def expected_global(n=SIZE):
    return np.arange(1, NP * n ** 3 + 1, dtype="<f8")


@pytest.mark.parametrize("case", [("posix", "shared"), ("mpiio", "independent"), ("mpiio", "collective")],
                         indirect=True, ids=lambda c: "-".join(c))
@pytest.mark.parametrize("halo", [1, 0])
def test_kept_shared_file_is_the_global_array(case, halo, run_iobench, tmp_path):
    backend, mode = case
    proc, doc = run_iobench(["--backend", backend, "--mode", mode, "--size", "3,4,5", "--keep",
                             "--param", f"halo={halo}", "--dir", tmp_path], np=4)
    assert proc.returncode == 0, proc.stderr
    assert doc["dims"] == [2, 2, 1] and doc["global_size"] == [6, 8, 5] and doc["halo"] == halo
    (f,) = doc["repetitions"][0]["files"]
    assert np.array_equal(np.fromfile(f, dtype="<f8"), np.arange(1, 6 * 8 * 5 + 1))


@pytest.mark.parametrize("case", [("posix", "fpp")], indirect=True, ids=lambda c: "-".join(c))
def test_kept_fpp_files_are_packed_blocks(case, run_iobench, tmp_path):
    proc, doc = run_iobench(["--backend", "posix", "--mode", "fpp", "--size", SIZE, "--keep",
                             "--dir", tmp_path])
    assert proc.returncode == 0, proc.stderr
    g = expected_global()
    for r in range(NP):   # dims [2,1,1]: rank r's block is the r-th slab of the C-order global array
        block = np.fromfile(tmp_path / f"iobench_posix_fpp_benchio.rep0.{r}", dtype="<f8")
        assert np.array_equal(block, g[r * SIZE ** 3:(r + 1) * SIZE ** 3])


@pytest.mark.parametrize("case", [("hdf5", "collective")], indirect=True, ids=lambda c: "-".join(c))
def test_kept_hdf5_dataset_is_the_global_array(case, run_iobench, tmp_path):
    if not shutil.which("h5dump"):
        pytest.skip("h5dump (hdf5-tools) not on PATH")
    proc, doc = run_iobench(["--backend", "hdf5", "--mode", "collective", "--size", SIZE, "--keep",
                             "--dir", tmp_path])
    assert proc.returncode == 0, proc.stderr
    (f,) = doc["repetitions"][0]["files"]
    raw = tmp_path / "data.bin"
    subprocess.run(["h5dump", "-d", "/data", "-b", "LE", "-o", str(raw), f], check=True, capture_output=True)
    assert np.array_equal(np.fromfile(raw, dtype="<f8"), expected_global())


@pytest.mark.parametrize("case", CASES, indirect=True, ids=lambda c: "-".join(c))
def test_corrupted_file_fails_verification(case, run_iobench, tmp_path):
    backend, mode = case
    base = ["--backend", backend, "--mode", mode, "--size", SIZE, "--dir", tmp_path, "--keep"]
    proc, _ = run_iobench(base + ["--phase", "write"])
    assert proc.returncode == 0, proc.stderr
    g = NP * SIZE ** 3 - 7                      # an element in rank 1's block
    needle = struct.pack("<d", float(g + 1))
    hits = []
    for f in data_files(tmp_path):
        data = bytearray(f.read_bytes())
        at = data.find(needle)
        if at >= 0:
            hits.append(f)
            data[at] ^= 0x01                    # lowest mantissa byte: a value that is close but wrong
            f.write_bytes(bytes(data))
    assert len(hits) == 1, f"value {g + 1} expected once in the data files, found in {hits}"
    proc, doc = run_iobench(base + ["--phase", "read"])
    assert proc.returncode == 1
    assert doc["status"] == "failed" and f"global index {g}" in doc["error"]
    assert "bw_MiBps" not in json.dumps(doc)
    assert f"global index {g}" in proc.stderr


def test_repetitions_and_summary(run_iobench, tmp_path):
    proc, doc = run_iobench(["--backend", "posix", "--size", SIZE, "--repeat", 4, "--dir", tmp_path,
                             "--json", tmp_path / "r.json"])
    assert proc.returncode == 0, proc.stderr
    assert [r["rep"] for r in doc["repetitions"]] == [0, 1, 2, 3]
    assert [r["files"][0].rsplit(".", 2)[-2] for r in doc["repetitions"]] == ["rep0", "rep1", "rep2", "rep3"]
    assert json.loads((tmp_path / "r.json").read_text()) == doc
    assert not (tmp_path / "r.json.tmp").exists()
    for phase, k in (("write", 12), ("read", 20)):
        bw = np.array([r[phase]["bw_MiBps"] for r in doc["repetitions"]])
        s = doc["summary"][phase]
        q1, med, q3 = np.percentile(bw, [25, 50, 75])
        assert s["bw_MiBps"]["median"] == pytest.approx(med)
        assert s["bw_MiBps"]["iqr"] == pytest.approx(q3 - q1)
        assert s["bw_MiBps"]["min"] == bw.min() and s["bw_MiBps"]["max"] == bw.max()
        assert s["outlier_k"] == k
        assert s["outliers"] == [i for i, b in enumerate(bw) if b > q3 + k * (q3 - q1) or b < q1 - k * (q3 - q1)]
    assert data_files(tmp_path) == []


def test_write_then_read_only(run_iobench, tmp_path):
    base = ["--backend", "mpiio", "--mode", "collective", "--size", SIZE, "--dir", tmp_path]
    proc, doc = run_iobench(base + ["--phase", "write", "--keep", "--repeat", 2])
    assert proc.returncode == 0, proc.stderr
    assert all("read" not in r for r in doc["repetitions"])
    assert doc["summary"].get("read") is None
    assert len(data_files(tmp_path)) == 2
    proc, doc = run_iobench(base + ["--phase", "read", "--repeat", 2])
    assert proc.returncode == 0, proc.stderr
    assert all(r["read"]["verified"] and "write" not in r for r in doc["repetitions"])
    assert data_files(tmp_path) == [], "a read-only run without --keep deletes what it read"


def test_hints_reach_mpiio(run_iobench, tmp_path):
    proc, doc = run_iobench(["--backend", "mpiio", "--mode", "collective", "--size", 8, "--dir", tmp_path,
                             "--hint", "cb_buffer_size=1048576", "--hint", "romio_cb_write=enable"])
    assert proc.returncode == 0, proc.stderr
    assert doc["hints_requested"] == {"cb_buffer_size": "1048576", "romio_cb_write": "enable"}
    assert doc["hints_in_effect"].get("cb_buffer_size") == "1048576"


def test_info_options(iobench, iobench_backends):
    for opt in ("--help", "--version", "--list"):
        proc = subprocess.run([iobench, opt], capture_output=True, text=True)
        assert proc.returncode == 0 and proc.stdout and not proc.stderr
    assert iobench_backends["posix"] == ["fpp", "shared"]
    assert iobench_backends["mpiio"] == ["independent", "collective"]
