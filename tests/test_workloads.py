"""Seed workloads as iobench patterns (hacc, nektar, mdfiles, mddatasets) with real MPI runs (2 ranks,
small sizes): layouts proven on the kept files with numpy and h5dump, re-partitioned reads, metadata
phases, and bad input."""
import re
import shutil
import subprocess

import numpy as np
import pytest

from tests.support.launch import BAD_INPUT_ENV, iobench_error_lines

NP = 2
HACC_VARS = ["id", "mask", "x", "y", "z", "vx", "vy", "vz", "phi"]
NEEDS_H5DUMP = pytest.mark.skipif(not shutil.which("h5dump"), reason="h5dump (hdf5-tools) not installed")


@pytest.fixture
def need(iobench_backends):
    def _need(backend):
        if backend not in iobench_backends:
            pytest.skip(f"backend {backend} not compiled into this iobench (see iobench --list)")
    return _need


def ok(proc, doc):
    assert proc.returncode == 0, proc.stderr
    assert doc["status"] == "ok" and doc["error"] is None
    return doc["repetitions"][0]


def leftovers(d):
    return sorted(p.name for p in d.iterdir())


def hacc_value(k, g):
    return k * 1e12 + g + 1


def h5_binary(path, dataset, out):
    """Raw little-endian bytes of one dataset, written by h5dump (an outside tool)."""
    subprocess.run(["h5dump", "-d", dataset, "-b", "LE", "-o", str(out), str(path)], check=True,
                   capture_output=True)
    return out.read_bytes()


# ---------------------------------------------------------------------------------------------- HACC
HACC_CASES = [("mpiio", "independent", "interleaved"), ("mpiio", "collective", "contiguous"),
              ("posix", "shared", "contiguous"), ("posix", "fpp", "interleaved"),
              ("hdf5", "independent", "individual"), ("hdf5", "collective", "multi"),
              ("hdf5", "independent", "compound")]


@pytest.mark.parametrize("backend,mode,layout", HACC_CASES, ids=lambda x: x)
def test_hacc_round_trip(backend, mode, layout, need, run_iobench, tmp_path):
    need(backend)
    n = 500
    proc, doc = run_iobench(["--backend", backend, "--mode", mode, "--pattern", "hacc", "--size", n,
                             "--param", f"layout={layout}", "--dir", tmp_path])
    rep = ok(proc, doc)
    assert doc["layout"] == layout and doc["particles_per_rank"] == n
    assert [v["name"] for v in doc["variables"]] == HACC_VARS
    assert all(v["bytes_total"] == NP * n * 8 for v in doc["variables"])
    assert doc["bytes_total"] == NP * n * 9 * 8
    assert rep["write"]["bytes"] == rep["read"]["bytes"] == doc["bytes_total"]
    assert rep["read"]["verified"] is True
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("backend", ["mpiio", "posix"])
def test_hacc_contiguous_file_layout(backend, run_iobench, tmp_path):
    n = 7
    mode = "shared" if backend == "posix" else "independent"
    proc, doc = run_iobench(["--backend", backend, "--mode", mode, "--pattern", "hacc", "--size", n,
                             "--param", "layout=contiguous", "--keep", "--name", "h", "--dir", tmp_path])
    ok(proc, doc)
    raw = np.fromfile(tmp_path / "h.rep0", dtype="<f8")
    assert raw.size == 9 * NP * n
    for k in range(9):
        assert doc["variables"][k]["file_offset"] == k * NP * n * 8
        for r in range(NP):
            off = (k * NP * n + r * n)  # in doubles: variable after variable across ranks
            want = [hacc_value(k, r * n + j) for j in range(n)]
            assert raw[off:off + n].tolist() == want, (k, r)


def test_hacc_interleaved_file_layout(run_iobench, tmp_path):
    n = 6
    proc, doc = run_iobench(["--backend", "mpiio", "--mode", "collective", "--pattern", "hacc", "--size", n,
                             "--param", "layout=interleaved", "--keep", "--name", "h", "--dir", tmp_path])
    ok(proc, doc)
    raw = np.fromfile(tmp_path / "h.rep0", dtype="<f8")
    for r in range(NP):
        for k in range(9):
            off = (r * 9 + k) * n  # each rank's 9 blocks follow each other
            assert raw[off:off + n].tolist() == [hacc_value(k, r * n + j) for j in range(n)], (r, k)


def test_hacc_misplaced_value_is_caught(run_iobench, tmp_path):
    n = 8
    base = ["--backend", "mpiio", "--pattern", "hacc", "--size", n, "--param", "layout=contiguous",
            "--keep", "--name", "h", "--dir", tmp_path]
    ok(*run_iobench(base + ["--phase", "write"]))
    f = tmp_path / "h.rep0"
    raw = np.fromfile(f, dtype="<f8")
    raw[3 * NP * n + n + 2] += 1.0  # variable y, rank 1, particle 2 -> global particle 10
    raw.tofile(f)
    proc, doc = run_iobench(base + ["--phase", "read"])
    assert proc.returncode == 1
    assert doc["status"] == "failed" and "variable y at global particle index 10" in doc["error"]
    assert "bw_MiBps" not in proc.stdout


@NEEDS_H5DUMP
def test_hacc_hdf5_layouts_seen_by_h5dump(need, run_iobench, tmp_path):
    need("hdf5")
    n = 5
    for layout in ("individual", "multi", "compound"):
        ok(*run_iobench(["--backend", "hdf5", "--pattern", "hacc", "--size", n, "--param", f"layout={layout}",
                         "--keep", "--name", layout, "--dir", tmp_path]))
    f = tmp_path / "compound.rep0"
    header = subprocess.run(["h5dump", "-H", str(f)], capture_output=True, text=True, check=True).stdout
    fields = re.findall(r'H5T_IEEE_F64LE "(\w+)";', header)
    assert "H5T_COMPOUND" in header and fields == HACC_VARS
    assert f"( {NP * n} ) / ( {NP * n} )" in header
    # h5dump's binary output skips compound types: read its text, every value printed with 17 digits
    text = subprocess.run(["h5dump", "-d", "particles", "-y", "-m", "%.17g", str(f)], capture_output=True,
                          text=True, check=True).stdout
    body = text[text.index("DATA {"):]
    comp = np.array([float(x) for x in re.findall(r"-?\d[\d.e+-]*", body)]).reshape(NP * n, 9)
    assert comp.tolist() == [[hacc_value(k, g) for k in range(9)] for g in range(NP * n)]
    multi = np.frombuffer(h5_binary(tmp_path / "multi.rep0", "particles", tmp_path / "m.bin"), dtype="<f8")
    assert multi.reshape(NP, 9, n).tolist() == [[[hacc_value(k, r * n + j) for j in range(n)] for k in range(9)]
                                                for r in range(NP)]
    for k, name in enumerate(HACC_VARS):
        v = np.frombuffer(h5_binary(tmp_path / "individual.rep0", name, tmp_path / f"{name}.bin"), dtype="<f8")
        assert v.tolist() == [hacc_value(k, g) for g in range(NP * n)], name


def test_hacc_hdf5_alignment_and_meta_block_size(need, run_iobench, tmp_path):
    need("hdf5")
    n = 1000
    base = ["--backend", "hdf5", "--pattern", "hacc", "--size", n, "--param", "layout=individual", "--keep",
            "--dir", tmp_path]
    ok(*run_iobench(base + ["--param", "alignment=0,65536", "--name", "al"]))
    ok(*run_iobench(base + ["--param", "meta_block_size=1048576", "--name", "mb"]))
    ok(*run_iobench(base + ["--name", "plain"]))

    def first_offsets(name):  # byte offset of particle 0 of each variable in the raw file
        raw = np.fromfile(tmp_path / f"{name}.rep0", dtype="<f8")
        return [int(np.flatnonzero(raw == hacc_value(k, 0))[0]) * 8 for k in range(9)]

    assert all(off % 65536 == 0 for off in first_offsets("al"))       # H5Pset_alignment
    assert min(first_offsets("mb")) >= 1048576                         # H5Pset_meta_block_size
    assert min(first_offsets("plain")) < 65536 and any(off % 65536 for off in first_offsets("plain"))


# -------------------------------------------------------------------------------------------- Nektar
@pytest.mark.parametrize("backend,mode", [("posix", "fpp"), ("posix", "shared"), ("mpiio", "collective"),
                                          ("hdf5", "independent"), ("hdf5", "collective"),
                                          ("sionlib", "independent"), ("adios2", "bp5")], ids=lambda x: x)
def test_nektar_round_trip(backend, mode, need, run_iobench, tmp_path):
    need(backend)
    proc, doc = run_iobench(["--backend", backend, "--mode", mode, "--pattern", "nektar", "--dir", tmp_path])
    rep = ok(proc, doc)
    per_rank = doc["elements_per_rank"]
    assert doc["case"] == "small" and sum(per_rank) == doc["elements_total"] == 100000
    assert len(set(per_rank)) == NP, "ranks must own different numbers of elements"
    E, C = doc["elements_total"], doc["coefficients_total"]
    assert E <= C <= 3 * E
    assert doc["bytes_total"] == 8 * (E + C + 8 + 5 * NP)  # ids, data, field defs, decomposition
    assert 2.0e6 < doc["bytes_total"] < 3.0e6               # the 2.5 MB "small" checkpoint
    assert rep["read"]["verified"] is True
    assert leftovers(tmp_path) == []


@NEEDS_H5DUMP
def test_nektar_hdf5_reread_with_other_rank_count(need, run_iobench, tmp_path):
    need("hdf5")
    base = ["--backend", "hdf5", "--pattern", "nektar", "--size", 5000, "--keep", "--name", "nk",
            "--dir", tmp_path]
    ok(*run_iobench(base + ["--phase", "write"]))
    f = tmp_path / "nk.rep0"
    dec = np.frombuffer(h5_binary(f, "DECOMPOSITION", tmp_path / "d.bin"), dtype="<i8").reshape(NP, 5)
    ids = np.frombuffer(h5_binary(f, "ELEMENTIDS", tmp_path / "i.bin"), dtype="<i8")
    data = np.frombuffer(h5_binary(f, "DATA", tmp_path / "x.bin"), dtype="<f8")
    # rows: elements, coefficients, element offset, coefficient offset, field hash
    assert dec[:, 0].sum() == ids.size == 5000 and dec[:, 1].sum() == data.size
    assert dec[0, 2] == 0 and dec[1, 2] == dec[0, 0] and dec[1, 3] == dec[0, 1] and dec[0, 0] != dec[1, 0]
    assert ids.tolist() == list(range(1, 5001)) and data[dec[1, 3]] == dec[1, 3] + 1

    for np_read in (1, 3):  # re-partitioned: the element set does not depend on the rank count
        proc, doc = run_iobench(base + ["--phase", "read", "--param", "write_ranks=2"], np=np_read)
        rep = ok(proc, doc)
        assert doc["ranks"] == np_read and rep["read"]["verified"] is True
        assert rep["read"]["bytes"] == 8 * (ids.size + data.size + 8 + 5 * NP)
    # without saying how many ranks wrote it, the decomposition dataset's shape does not match
    proc, doc = run_iobench(base + ["--phase", "read"], np=1)
    assert proc.returncode == 1 and "DECOMPOSITION" in doc["error"]


def test_nektar_large_case_scales(run_iobench, tmp_path):
    proc, doc = run_iobench(["--backend", "posix", "--pattern", "nektar", "--param", "case=large",
                             "--phase", "write", "--dir", tmp_path])
    ok(proc, doc)
    assert 200e6 < doc["bytes_total"] < 300e6
    assert 150 < doc["coefficients_total"] / doc["elements_total"] < 250


# ------------------------------------------------------------------------------------------- mdfiles
def test_mdfiles_ops_per_phase_and_no_files_left(run_iobench, tmp_path):
    proc, doc = run_iobench(["--backend", "posix", "--pattern", "mdfiles", "--param", "nfiles=40",
                             "--param", "filesize=10000", "--repeat", 2, "--dir", tmp_path])
    assert proc.returncode == 0, proc.stderr
    assert doc["files_per_rank"] == 40 and doc["bytes_total"] == NP * 40 * 10000
    assert doc["sync_method"] == "fsync" and doc["cache_defeat"] == "posix_fadvise_dontneed"
    for rep in doc["repetitions"]:
        md = rep["metadata"]
        for phase in ("create", "stat", "read", "remove"):
            assert md[phase]["ops"] == NP * 40
            assert md[phase]["total_s"] > 0
            assert md[phase]["ops_per_s"] == pytest.approx(NP * 40 / md[phase]["total_s"])
        assert rep["write"]["sync_s"] > 0 and rep["write"]["total_s"] == md["create"]["total_s"]
        assert rep["read"]["verified"] is True and rep["read"]["cache_resident_before_read"] <= 0.05
    assert doc["summary"]["write"]["bw_MiBps"]["median"] > 0
    assert leftovers(tmp_path) == []


def test_mdfiles_keep_leaves_every_file(run_iobench, tmp_path):
    ok(*run_iobench(["--backend", "posix", "--pattern", "mdfiles", "--param", "nfiles=5", "--param",
                     "filesize=100", "--keep", "--name", "md", "--dir", tmp_path]))
    files = sorted((tmp_path / "md.rep0").iterdir())
    assert len(files) == NP * 5 and all(f.stat().st_size == 100 for f in files)


def test_mdfiles_inode_limit_is_bad_input(iobench, run_iobench, tmp_path):
    d = tmp_path / "tiny"
    d.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m,nr_inodes=50", "tmpfs", str(d)],
                      capture_output=True).returncode != 0:
        pytest.skip("cannot mount a small tmpfs here (needs root)")
    try:
        proc, _ = run_iobench(["--backend", "posix", "--pattern", "mdfiles", "--param", "nfiles=30",
                               "--param", "filesize=100", "--dir", d])
        assert proc.returncode == 2
        (line,) = iobench_error_lines(proc.stderr)
        assert "free inodes" in line and line.endswith("'30'")
        assert leftovers(d) == []
    finally:
        subprocess.run(["umount", str(d)], check=True)


def test_mdfiles_empty_files_are_metadata_calls_only(run_iobench, tmp_path):
    """filesize=0 (mdtest -w 0): every phase counts its operations, nothing is written, synced or
    read, and the history's amount is the operations (reframe results.reps_string)."""
    from iobench_lib import results
    proc, doc = run_iobench(["--backend", "posix", "--pattern", "mdfiles", "--param", "filesize=0",
                             "--size", 300, "--repeat", 2, "--dir", tmp_path])
    rep = ok(proc, doc)
    assert doc["file_size"] == 0 and doc["bytes_total"] == 0
    assert doc["sync_method"] == "none (empty files)" and doc["cache_defeat"] == "none (empty files)"
    for rep in doc["repetitions"]:
        for phase in ("create", "stat", "read", "remove"):
            assert rep["metadata"][phase]["ops"] == NP * 300 and rep["metadata"][phase]["total_s"] > 0
        assert rep["write"]["sync_s"] == 0 and rep["write"]["access_s"] == 0 and rep["write"]["bytes"] == 0
        assert rep["write"]["open_s"] > 0 and rep["read"]["open_s"] > 0 and rep["read"]["verified"] is True
        assert rep["write"]["bw_MiBps"] == 0 and rep["read"]["access_bw_MiBps"] == 0   # not 0/0
    assert results.problems(doc, backend="posix", mode="fpp", pattern="mdfiles", ranks=NP, exitcode=0) == []
    reps = results.reps_string(doc)
    assert reps.startswith(f"write={NP * 300}:") and f";read={NP * 300}:" in reps
    values = results.perf_values(doc)
    assert "write_bw" not in values and values["create_ops"][1] == "ops/s" and values["read_ops"][0] > 0
    assert leftovers(tmp_path) == []
    ok(*run_iobench(["--backend", "posix", "--pattern", "mdfiles", "--param", "filesize=0",
                     "--param", "nfiles=7", "--keep", "--name", "md", "--dir", tmp_path]))
    files = sorted((tmp_path / "md.rep0").iterdir())
    assert len(files) == NP * 7 and all(f.stat().st_size == 0 for f in files)


SHIM = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <string.h>
#include <unistd.h>
/* one stray file beside f0.0 when it is created: the run must count it */
int open(const char *p, int f, ...) {
    va_list ap; va_start(ap, f); mode_t m = f & O_CREAT ? va_arg(ap, mode_t) : 0; va_end(ap);
    int (*real)(const char *, int, ...) = dlsym(RTLD_NEXT, "open");
    size_t n = strlen(p);
    if ((f & O_CREAT) && n > 5 && !strcmp(p + n - 5, "/f0.0")) {
        char q[4200]; strcpy(q, p); strcat(q, ".stray");
        int fd = real(q, O_CREAT | O_WRONLY, 0644); if (fd >= 0) close(fd);
    }
    return real(p, f, m);
}
"""


def test_mdfiles_empty_files_a_stray_file_fails_the_count(run_iobench, tmp_path):
    if not shutil.which("cc"):
        pytest.skip("no C compiler (cc) for the shim")
    (tmp_path / "shim.c").write_text(SHIM)
    lib = tmp_path / "shim.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(lib), str(tmp_path / "shim.c"), "-ldl"], check=True)
    data = tmp_path / "d"
    data.mkdir()
    env = dict(__import__("os").environ, LD_PRELOAD=str(lib))
    proc, doc = run_iobench(["--backend", "posix", "--pattern", "mdfiles", "--param", "filesize=0",
                             "--param", "nfiles=20", "--name", "md", "--dir", data], env=env)
    assert proc.returncode == 1 and doc["status"] == "failed", proc.stderr
    assert f"holds {NP * 20 + 1} entries, expected {NP * 20}" in doc["error"]
    assert leftovers(data) == ["md.rep0"]   # the stray file is not the pattern's to remove


# ---------------------------------------------------------------------------------------- mddatasets
@pytest.mark.parametrize("coll", ["0", "1"])
def test_mddatasets_collective_metadata_read_back(coll, need, run_iobench, tmp_path):
    need("hdf5")
    proc, doc = run_iobench(["--backend", "hdf5", "--mode", "collective", "--pattern", "mddatasets",
                             "--param", "nvars=10", "--param", "nblocks=20", "--param", f"coll_metadata={coll}",
                             "--size", 16, "--dir", tmp_path])
    rep = ok(proc, doc)
    md = rep["metadata"]
    assert md["datasets"] == 200 and md["attributes"] == 2 * 200 + 2 * 20
    on = coll == "1"
    assert md["coll_metadata_requested"] is on
    assert md["all_coll_metadata_ops"] is on and md["coll_metadata_write"] is on  # from H5Fget_access_plist
    assert set(md["write"]) == {"open_s", "define_s", "write_s", "flush_s", "close_s"}
    assert set(md["read"]) == {"open_s", "lookup_s", "read_s", "close_s"}
    # one span per rank (IOR's timing): at least the slowest step, at most the sum of the step maxima
    for phase in ("write", "read"):
        total = rep[phase]["total_s"]
        assert max(md[phase].values()) <= total <= sum(md[phase].values()) * 1.001 + 1e-6, (phase, rep, md)
    assert doc["bytes_total"] == 200 * 16 * 8 * NP and rep["read"]["verified"] is True
    assert leftovers(tmp_path) == []


def test_mddatasets_file_structure(need, run_iobench, tmp_path):
    need("hdf5")
    if not shutil.which("h5ls"):
        pytest.skip("h5ls (hdf5-tools) not installed")
    ok(*run_iobench(["--backend", "hdf5", "--pattern", "mddatasets", "--param", "nvars=4", "--param",
                     "nblocks=3", "--size", 5, "--keep", "--name", "ex", "--dir", tmp_path]))
    out = subprocess.run(["h5ls", "-r", str(tmp_path / "ex.rep0")], capture_output=True, text=True,
                         check=True).stdout
    dsets = re.findall(r"^/block_(\d+)/var_(\d+)\s+Dataset \{(\d+)\}", out, re.M)
    assert len(dsets) == 12 and {d[2] for d in dsets} == {str(NP * 5)}


def test_mddatasets_library_error_is_reported(need, run_iobench, tmp_path):
    need("hdf5")
    (tmp_path / "ex.rep0").mkdir()  # the data file's name is taken by a directory
    proc, doc = run_iobench(["--backend", "hdf5", "--pattern", "mddatasets", "--name", "ex", "--dir", tmp_path])
    assert proc.returncode == 1 and doc["status"] == "failed"
    assert doc["error"].startswith("H5Fcreate(") and "MPI_File_open" in doc["error"]  # HDF5's own text
    assert "bw_MiBps" not in proc.stdout and "metadata" not in doc["repetitions"][0]
    assert leftovers(tmp_path) == ["ex.rep0"]


# ------------------------------------------------------------------------------------------ bad input
BAD = [
    (["--backend", "hdf5", "--pattern", "hacc", "--param", "alignment=3"], "'3'"),
    (["--backend", "hdf5", "--pattern", "hacc", "--param", "alignment=4611686018427387904"],
     "file size limit"),
    (["--backend", "hdf5", "--pattern", "hacc", "--param", "meta_block_size=0"], "meta_block_size"),
    (["--backend", "mpiio", "--pattern", "hacc", "--param", "layout=compound"], "'compound'"),
    (["--backend", "hdf5", "--pattern", "hacc", "--param", "layout=interleaved"], "'interleaved'"),
    (["--backend", "hdf5", "--pattern", "hacc", "--size", "0"], "'0'"),
    (["--backend", "posix", "--pattern", "nektar", "--size", "0"], "'0'"),
    (["--backend", "posix", "--pattern", "nektar", "--param", "case=huge"], "'huge'"),
    (["--backend", "posix", "--pattern", "nektar", "--param", "write_ranks=3"], "'3'"),
    (["--backend", "hdf5", "--pattern", "mddatasets", "--param", "nvars=0"], "'0'"),
    (["--backend", "hdf5", "--pattern", "mddatasets", "--param", "coll_metadata=yes"], "'yes'"),
    (["--backend", "posix", "--pattern", "mddatasets"], "'posix'"),
    (["--backend", "mpiio", "--pattern", "mdfiles"], "'mpiio'"),
    (["--backend", "posix", "--pattern", "mdfiles", "--param", "nfiles=0"], "'0'"),
    (["--backend", "posix", "--pattern", "mdfiles", "--param", "filesize=-5"], "'-5'"),
    (["--backend", "posix", "--pattern", "mdfiles", "--param", "filesize=-0"], "'-0'"),
    (["--backend", "posix", "--pattern", "mdfiles", "--param", "filesize=none"], "--param filesize (an integer 0..1073741824) 'none'"),
    (["--backend", "posix", "--pattern", "mdfiles", "--param", "filesize=1073741825"], "'1073741825'"),
]


@pytest.mark.parametrize("args,names", BAD, ids=lambda x: " ".join(x) if isinstance(x, list) else None)
def test_bad_input(args, names, iobench_backends, run_iobench, tmp_path):
    if args[1] not in iobench_backends:
        pytest.skip(f"backend {args[1]} not compiled in")
    proc, doc = run_iobench(args + ["--dir", tmp_path], env=BAD_INPUT_ENV)
    assert proc.returncode == 2 and doc is None
    (line,) = iobench_error_lines(proc.stderr)
    assert line.startswith("iobench: error: ") and names in line
    assert "Traceback" not in proc.stderr and leftovers(tmp_path) == []
