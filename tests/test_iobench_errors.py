"""iobench bad input (exit 2, one line, nothing created) and library failures (disk full: exit 1, the
library's message, no bandwidth, no data file left). Real runs under mpirun with 2 ranks."""
import json
import subprocess

import pytest

from tests.support.launch import BAD_INPUT_ENV


def own_lines(stderr):
    """iobench's stderr lines; mpirun adds a banner of its own when ranks exit non-zero."""
    return [line for line in stderr.splitlines() if line.startswith("iobench")]


BAD = [  # (args, text the one error line must contain)
    (["--backend", "nosuch"], "'nosuch'"),
    (["--mode", "fpp"], "'--backend'"),
    (["--backend"], "'--backend'"),
    (["--backend", "posix", "--mode", "collective"], "'collective'"),
    (["--backend", "mpiio", "--mode", "fpp"], "'fpp'"),
    (["--backend", "posix", "--pattern", "nosuch"], "'nosuch'"),
    (["--backend", "posix", "--frobnicate"], "'--frobnicate'"),
    (["--backend", "posix", "stray"], "'stray'"),
    (["--backend", "posix", "--size", "0"], "'0'"),
    (["--backend", "posix", "--size", "-4"], "'-4'"),
    (["--backend", "posix", "--size", "abc"], "'abc'"),
    (["--backend", "posix", "--size", "16x"], "'16x'"),
    (["--backend", "posix", "--size", "1,2"], "'1,2'"),
    (["--backend", "posix", "--size", "99999999999999999999"], "'99999999999999999999'"),
    (["--backend", "posix", "--size", "2147483648"], "'2147483648'"),
    (["--backend", "posix", "--size", "2147483647"], "'2147483647'"),          # n^3 * 8 overflows
    (["--backend", "posix", "--size", "2000000000,2000000000,8"], "'2000000000,2000000000,8'"),
    (["--backend", "posix", "--repeat", "0"], "'0'"),
    (["--backend", "posix", "--repeat", "two"], "'two'"),
    (["--backend", "posix", "--phase", "sideways"], "'sideways'"),
    (["--backend", "posix", "--dir", "/nonexistent/dir"], "'/nonexistent/dir'"),
    (["--backend", "mpiio", "--hint", "cb_buffer_size"], "'cb_buffer_size'"),
    (["--backend", "mpiio", "--hint", "=4"], "'=4'"),
    (["--backend", "posix", "--param", "alignment"], "'alignment'"),
    (["--backend", "posix", "--param", "nosuchkey=1"], "'nosuchkey'"),
    (["--backend", "posix", "--name", "a/b"], "'a/b'"),
    (["--backend", "posix", "--param", "halo=2"], "'2'"),
    (["--backend", "posix", "--json", "/nonexistent/dir/r.json"], "'/nonexistent/dir/r.json'"),
    (["--backend", "hdf5", "--param", "alignment=3"], "'3'"),
    (["--backend", "hdf5", "--param", "alignment=4096,1000"], "'4096,1000'"),
    (["--backend", "hdf5", "--param", "meta_block_size=0"], "'0'"),
    (["--backend", "hdf5", "--param", "coll_metadata=2"], "'2'"),
]


@pytest.mark.parametrize("args,named", BAD, ids=[" ".join(a) for a, _ in BAD])
def test_bad_input(args, named, run_iobench, iobench_backends, tmp_path):
    if "hdf5" in args and "hdf5" not in iobench_backends:
        pytest.skip("hdf5 backend not compiled in")
    data = tmp_path / "data"
    data.mkdir()
    args = list(args) if "--dir" in args else ["--dir", data] + list(args)
    proc, doc = run_iobench(args, env=BAD_INPUT_ENV)
    assert proc.returncode == 2, proc.stderr
    lines = own_lines(proc.stderr)
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("iobench: error: ") and named in lines[0]
    assert "Traceback" not in proc.stderr and doc is None
    assert list(data.iterdir()) == [] and sorted(p.name for p in tmp_path.iterdir()) == ["data"]


def test_bad_input_single_process_prints_exactly_one_line(iobench, tmp_path):
    proc = subprocess.run([iobench, "--backend", "posix", "--size", "0", "--dir", str(tmp_path)],
                          capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr == "iobench: error: bad --size (1..2147483647 per number) '0'\n"
    assert proc.stdout == "" and list(tmp_path.iterdir()) == []


def test_dir_that_is_a_file(run_iobench, tmp_path):
    f = tmp_path / "plain"
    f.write_text("x")
    proc, _ = run_iobench(["--backend", "posix", "--dir", f])
    assert proc.returncode == 2 and f"'{f}'" in own_lines(proc.stderr)[0]


def test_read_phase_without_files(run_iobench, tmp_path):
    for backend, mode in (("posix", "fpp"), ("mpiio", "collective")):
        proc, _ = run_iobench(["--backend", backend, "--mode", mode, "--phase", "read", "--dir", tmp_path])
        assert proc.returncode == 2
        (line,) = own_lines(proc.stderr)
        assert "does not exist" in line and str(tmp_path) in line
    assert list(tmp_path.iterdir()) == []


@pytest.fixture
def tiny_tmpfs(tmp_path):
    mnt = tmp_path / "full"
    mnt.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mnt)], capture_output=True,
                          text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {proc.stderr.strip()}")
    yield mnt
    subprocess.run(["umount", str(mnt)], check=True)


ENOSPC_CASES = [("posix", "fpp"), ("posix", "shared"), ("mpiio", "independent"), ("mpiio", "collective"),
                ("hdf5", "independent"), ("hdf5", "collective")]


@pytest.mark.parametrize("backend,mode", ENOSPC_CASES, ids=["-".join(c) for c in ENOSPC_CASES])
def test_disk_full(backend, mode, tiny_tmpfs, run_iobench, iobench_backends):
    if backend not in iobench_backends:
        pytest.skip(f"{backend} not compiled in")
    # 80^3 doubles = 4 MiB per rank, 8 MiB in all, on a 4 MiB filesystem
    proc, doc = run_iobench(["--backend", backend, "--mode", mode, "--size", 80, "--dir", tiny_tmpfs])
    assert proc.returncode == 1, proc.stderr
    assert doc["status"] == "failed"
    # the library's own text. HDF5's stack says "file write failed" (MPI returned no error); errno of
    # the failed pwritev is added when it survived the library's unwinding.
    texts = ["No space left on device"] + (["file write failed"] if backend == "hdf5" else [])
    # a library hung on the error path before rank 0 learnt the error: the watchdog's document says
    # so, and the failing rank's own line on stderr carries the library's text
    said = own_lines(proc.stderr) if doc["error"].startswith("another rank failed") else [doc["error"]]
    assert any(t in line for t in texts for line in said), (doc["error"], proc.stderr)
    assert any("No space left on device" in line for line in own_lines(proc.stderr)) or backend == "hdf5"
    text = json.dumps(doc)
    assert "bw_MiBps" not in text and "access_bw_MiBps" not in text
    assert list(tiny_tmpfs.iterdir()) == [], "data files of a failed run must be removed"


# One rank's write fails (MPI_ERR_IO) and its MPI_File_close never returns, as a library left stuck in
# a collective call after a failure does; the other rank then waits in its own (collective) close
# forever, its watchdog never armed (it did not fail).
HANG_SHIM = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>
static int rank0(void)   /* the rank that fails and hangs: HANG_RANK (default 0) */
{
    const char *r = getenv("OMPI_COMM_WORLD_RANK"), *h = getenv("HANG_RANK");
    return r && atoi(r) == (h ? atoi(h) : 0);
}
int MPI_File_write(void *fh, const void *buf, int n, void *type, void *st)
{
    int (*real)(void *, const void *, int, void *, void *) = dlsym(RTLD_NEXT, "MPI_File_write");
    return rank0() ? 35 /* MPI_ERR_IO */ : real(fh, buf, n, type, st);
}
int MPI_File_close(void *fh)
{
    int (*real)(void *) = dlsym(RTLD_NEXT, "MPI_File_close");
    if (rank0())
        for (;;)
            pause();
    return real(fh);
}
"""


@pytest.mark.parametrize("hang_rank", ["0", "1"])
def test_a_hung_error_path_still_leaves_the_failed_document(hang_rank, run_iobench, iobench_backends,
                                                            tmp_path):
    """The watchdog's exit (IOBENCH_HANG_S) prints and writes the failed document, with the error and
    the hang both said, and removes the data files: a hung run is not a run without a result. With
    rank 1 failing, rank 0 is the one stuck without a watchdog (the CI failure of
    test_disk_full[hdf5-collective]): rank 1 writes it."""
    from tests.support.preload import build_preload
    if "mpiio" not in iobench_backends:
        pytest.skip("mpiio not compiled in")
    shim = build_preload(tmp_path, "hang", HANG_SHIM)
    data = tmp_path / "data"
    data.mkdir()
    out = tmp_path / "result.json"
    proc, doc = run_iobench(["--backend", "mpiio", "--mode", "independent", "--size", 32, "--dir", data,
                             "--json", out], timeout=120,
                            env={"LD_PRELOAD": shim, "IOBENCH_HANG_S": "3", "HANG_RANK": hang_rank})
    assert proc.returncode == 1, proc.stderr
    assert doc is not None, f"no document on stdout; stderr:\n{proc.stderr}"
    assert doc["status"] == "failed"
    assert "MPI_ERR_IO" in doc["error"] and "did not complete within 3 s" in doc["error"], doc["error"]
    assert json.loads(out.read_text()) == doc
    assert "bw_MiBps" not in json.dumps(doc)
    lines = [line for line in own_lines(proc.stderr) if line.startswith(f"iobench: rank {hang_rank}:")]
    assert lines and "MPI_ERR_IO" in lines[0] and "within 3 s" in lines[0], proc.stderr
    assert list(data.iterdir()) == [], "data files of a hung run must be removed"


@pytest.mark.parametrize("value", ["0", "-5", "soon", "1e3", "999999"])
def test_bad_hang_seconds_is_bad_input(value, run_iobench, tmp_path):
    proc, doc = run_iobench(["--backend", "posix", "--dir", tmp_path],
                            env=dict(BAD_INPUT_ENV, IOBENCH_HANG_S=value))
    assert proc.returncode == 2 and doc is None
    lines = own_lines(proc.stderr)
    assert len(lines) == 1 and f"'{value}'" in lines[0] and "IOBENCH_HANG_S" in lines[0], proc.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_hang_after_the_document_was_emitted_does_not_print_a_second(run_iobench, iobench_backends, tmp_path):
    """With barriers=1 the failure is agreed inside the span, so the failure path emits the document
    and then releases the library, whose close hangs: the watchdog ends the run without a second
    document on stdout, and says the hang on stderr."""
    from tests.support.preload import build_preload
    if "mpiio" not in iobench_backends:
        pytest.skip("mpiio not compiled in")
    shim = build_preload(tmp_path, "hang", HANG_SHIM)
    data = tmp_path / "data"
    data.mkdir()
    proc, doc = run_iobench(["--backend", "mpiio", "--mode", "independent", "--size", 32, "--dir", data,
                             "--param", "barriers=1"], timeout=120,
                            env={"LD_PRELOAD": shim, "IOBENCH_HANG_S": "3"})
    assert proc.returncode == 1, proc.stderr
    assert doc is not None, f"stdout is not one document:\n{proc.stdout}"
    assert doc["status"] == "failed" and "MPI_ERR_IO" in doc["error"]
    assert "did not complete" not in doc["error"]
    assert any("within 3 s" in line for line in own_lines(proc.stderr)), proc.stderr
    assert list(data.iterdir()) == []


def option_tables(iobench):
    """iobench --list's option tables: {owner: [(key, the whole line)]}, owners as listed."""
    out = subprocess.run([iobench, "--list"], capture_output=True, text=True, check=True).stdout
    tables, owner = {}, None
    for line in out.split("\n\n", 1)[1].splitlines():
        if line.startswith("  ") and not line.startswith("    "):
            owner = line.split()[0]
            tables[owner] = []
        elif line.startswith("    ") and owner and not line.strip().startswith("("):
            tables[owner].append((line.split()[0].split("=")[0], line))
    return tables


def test_every_listed_key_is_validated_as_listed(iobench, iobench_backends, tmp_path):
    """One table per owner gives --help and the validation: every key --list shows (but the strings
    passed on to the library) refuses 'x' with one line naming the key, what it accepts exactly as
    --list says it, and the value; nothing is created."""
    tables = option_tables(iobench)
    patterns = {"benchio", "hacc", "nektar", "mdfiles", "ior", "mddatasets"} & set(tables)
    assert {"driver", "posix", "mpiio"} <= set(tables) and {"benchio", "ior", "mdfiles"} <= patterns
    runs = []
    for owner, keys in tables.items():
        backend = owner if owner in iobench_backends else "hdf5" if owner == "mddatasets" else "posix"
        if backend not in iobench_backends:
            continue
        for key, line in keys:
            if "passed on, the library checks it" in line:
                continue
            mode = line.split("[", 1)[1].split("]")[0].split("|")[0] if " [" in line else iobench_backends[backend][0]
            args = [iobench, "--backend", backend, "--mode", mode, "--param", f"{key}=x", "--dir", str(tmp_path)]
            if owner in patterns:
                args += ["--pattern", owner]
            runs.append((owner, key, line, subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                                            text=True)))
    for owner, key, line, proc in runs:       # started together: each MPI start-up costs ~0.5 s
        _, stderr = proc.communicate(timeout=120)
        assert proc.returncode == 2, (owner, key, stderr)
        prefix = f"iobench: error: --param {key} ("
        assert stderr.startswith(prefix) and stderr.endswith(") 'x'\n"), (owner, key, stderr)
        accepted = stderr[len(prefix):-len(") 'x'\n")]
        assert f" {accepted} " in line, (owner, key, accepted, line)
    assert len(runs) >= 15 and list(tmp_path.iterdir()) == []
