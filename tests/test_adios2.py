"""ADIOS2 backend: real MPI runs (2 ranks, 32 KiB per rank) through the BP5, BP4 and HDF5 engines:
round trips with every element verified, the engine files synced and left complete, no profiling
litter, parameters reaching the engine, corruption caught, bad input.
Skipped, with the reason, when iobench was built without ADIOS2 (run ci/build_adios2.sh first)."""
import json
import re
import subprocess
import struct

import pytest

from tests.support.launch import iobench_error_lines, mpirun_cmd

SIZE = 16                      # 16^3 doubles = 32 KiB per rank
NP = 2
PER_RANK = SIZE ** 3 * 8
ENGINES = ["bp5", "bp4", "hdf5"]
SUFFIX = {"bp5": ".bp", "bp4": ".bp", "hdf5": ".h5"}


@pytest.fixture(autouse=True)
def need_adios2(iobench_backends):
    if "adios2" not in iobench_backends:
        pytest.skip("iobench built without ADIOS2: run ci/build_adios2.sh (installs into "
                    "~/.cache/ioregress/adios2-<version>/), then rebuild iobench with that prefix")


def base(tmp_path, mode, *extra):
    return ["--backend", "adios2", "--mode", mode, "--size", SIZE, "--dir", tmp_path, *extra]


def engine_files(target):
    return sorted(p.name for p in target.iterdir()) if target.is_dir() else [target.name]


@pytest.mark.parametrize("mode", ENGINES)
def test_round_trip_leaves_nothing(mode, iobench, tmp_path):
    work = tmp_path / "cwd"        # the working directory too: ADIOS2 must not drop files there
    work.mkdir()
    data = tmp_path / "data"
    data.mkdir()
    proc = subprocess.run(mpirun_cmd(NP) + [iobench] + [str(a) for a in base(data, mode)], cwd=work,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["status"] == "ok" and doc["verify"] is True
    assert doc["library_versions"]["adios2"].count(".") == 2
    assert doc["sync_method"] == "fsync of engine files after close"
    (rep,) = doc["repetitions"]
    assert rep["files"] == [f"{data}/iobench_adios2_{mode}_benchio.rep0{SUFFIX[mode]}"]
    for phase in ("write", "read"):
        assert rep[phase]["bytes"] == NP * PER_RANK and rep[phase]["bw_MiBps"] > 0
        assert rep[phase]["sync_s"] >= 0
    assert rep["read"]["verified"] is True
    if doc["fs_type"] != "tmpfs":
        assert rep["read"]["cache_resident_before_read"] <= 0.05
    # data deleted outside the timer, and no profiling.json or other litter anywhere
    assert list(data.iterdir()) == [] and list(work.iterdir()) == []


@pytest.mark.parametrize("mode", ["bp5", "bp4"])
def test_kept_bp_directory_is_complete(mode, run_iobench, tmp_path):
    proc, doc = run_iobench(base(tmp_path, mode, "--keep", "--phase", "write"))
    assert proc.returncode == 0, proc.stderr
    bp = tmp_path / f"iobench_adios2_{mode}_benchio.rep0.bp"
    names = engine_files(bp)
    assert "data.0" in names and "md.idx" in names and "md.0" in names, names
    if mode == "bp5":
        # BP5 (2.11) writes profiling.json into the .bp directory whatever Profile says; it goes
        # with the directory, and nothing lands beside it
        assert "mmd.0" in names, names
        assert [p.name for p in tmp_path.iterdir()] == [bp.name]
    else:
        assert "profiling.json" not in names, "Profile=Off must reach BP4"
    payload = sum((bp / n).stat().st_size for n in names if n.startswith("data."))
    assert payload >= NP * PER_RANK


@pytest.mark.parametrize("aggregators", [1, 2])
def test_num_aggregators_decides_subfiles(aggregators, run_iobench, tmp_path):
    proc, doc = run_iobench(base(tmp_path, "bp5", "--keep", "--phase", "write",
                                 "--param", f"NumAggregators={aggregators}"))
    assert proc.returncode == 0, proc.stderr
    assert doc["params"] == {"NumAggregators": str(aggregators)}
    bp = tmp_path / "iobench_adios2_bp5_benchio.rep0.bp"
    subfiles = [n for n in engine_files(bp) if n.startswith("data.")]
    assert len(subfiles) == aggregators, subfiles


@pytest.mark.parametrize("mode,params", [("bp5", ["AsyncWrite=true", "BufferChunkSize=65536"]),
                                         ("bp4", ["BurstBufferPath=BBDIR", "NumAggregators=1"]),
                                         ("hdf5", ["H5CollectiveMPIO=yes"])])
def test_engine_params_round_trip(mode, params, run_iobench, tmp_path):
    bb = tmp_path / "bb"
    bb.mkdir()
    data = tmp_path / "data"
    data.mkdir()
    args = base(data, mode)
    for p in params:
        args += ["--param", p.replace("BBDIR", str(bb))]
    proc, doc = run_iobench(args)
    assert proc.returncode == 0, proc.stderr
    assert doc["repetitions"][0]["read"]["verified"] is True
    assert list(data.iterdir()) == []


@pytest.mark.parametrize("mode", ["bp5", "hdf5"])
def test_corrupted_data_fails_verification(mode, run_iobench, tmp_path):
    args = base(tmp_path, mode, "--keep")
    proc, doc = run_iobench(args + ["--phase", "write"])
    assert proc.returncode == 0, proc.stderr
    target = tmp_path / f"iobench_adios2_{mode}_benchio.rep0{SUFFIX[mode]}"
    files = [target / n for n in engine_files(target)] if target.is_dir() else [target]
    g = NP * SIZE ** 3 - 7                           # an element of rank 1's block
    needle = struct.pack("<d", float(g + 1))
    hits = []
    for f in files:
        data = bytearray(f.read_bytes())
        at = data.find(needle)
        if at >= 0:
            data[at] ^= 0x01
            f.write_bytes(bytes(data))
            hits.append(f.name)
    assert len(hits) == 1, hits
    proc, doc = run_iobench(args + ["--phase", "read"])
    assert proc.returncode == 1
    assert doc["status"] == "failed" and f"global index {g}" in doc["error"]
    assert "bw_MiBps" not in json.dumps(doc)


@pytest.mark.parametrize("mode,param,value", [("bp5", "AggregatorRatio", "3"), ("bp4", "AggregatorRatio", "0"),
                                              ("hdf5", "H5CollectiveMPIO", "maybe")])
def test_bad_param_values(mode, param, value, run_iobench, tmp_path):
    proc, doc = run_iobench(base(tmp_path, mode, "--param", f"{param}={value}"))
    assert proc.returncode == 2
    (line,) = iobench_error_lines(proc.stderr)
    assert line.startswith("iobench: error: ") and param in line and line.endswith(f"'{value}'")
    assert doc is None and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("mode,param", [("hdf5", "NumAggregators=1"), ("bp4", "AsyncWrite=true")])
def test_param_of_another_engine(mode, param, run_iobench, tmp_path):
    proc, doc = run_iobench(base(tmp_path, mode, "--param", param))
    assert proc.returncode == 2
    (line,) = iobench_error_lines(proc.stderr)
    assert f"is not used by --mode {mode} of adios2" in line and line.endswith(f"'{param.split('=')[0]}'")
    assert list(tmp_path.iterdir()) == []


def test_unknown_engine(run_iobench, tmp_path):
    proc, doc = run_iobench(base(tmp_path, "bp3"))
    assert proc.returncode == 2
    (line,) = iobench_error_lines(proc.stderr)
    assert line.endswith("'bp3'") and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("param,words", [("AsyncWrite=maybe", 'Unknown BP5 AsyncWriteMode parameter "maybe"'),
                                         ("NumAggregators=many", "stoul")])
def test_value_adios2_rejects_carries_its_message(param, words, run_iobench, tmp_path):
    proc, doc = run_iobench(base(tmp_path, "bp5", "--param", param))
    assert proc.returncode == 1
    assert doc["status"] == "failed" and "bw_MiBps" not in json.dumps(doc)
    err = doc["error"]
    # the call with the parameters it was given, then ADIOS2's own words (BP5 says just "stoul"
    # for a non-number), without its colour codes and timestamps
    assert err.startswith("adios2_open(") and param in err, err
    assert "[ADIOS2 ERROR]" in err and words in err and "\033" not in err, err
    assert not re.search(r"\[\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4}\]", err), err
    assert list(tmp_path.iterdir()) == []


def test_read_with_other_rank_count_says_why(run_iobench, tmp_path):
    args = base(tmp_path, "bp5", "--keep")
    proc, _ = run_iobench(args + ["--phase", "write"])
    assert proc.returncode == 0, proc.stderr
    proc, doc = run_iobench(args + ["--phase", "read"], np=1)
    assert proc.returncode == 1
    assert "another shape" in doc["error"]


@pytest.mark.parametrize("mode,pattern,extra", [
    ("bp5", "hacc", ["--size", "1000"]),                    # compound elements: a trailing dimension
    ("hdf5", "hacc", ["--size", "1000", "--param", "layout=multi"]),
    ("bp4", "nektar", ["--param", "case=small"]),           # int64 variables, blocks only on rank 0
    ("hdf5", "nektar", ["--param", "case=small"]),          # empty blocks still create the dataset
])
def test_workload_patterns(mode, pattern, extra, run_iobench, tmp_path):
    args = ["--backend", "adios2", "--mode", mode, "--pattern", pattern, "--dir", tmp_path, *extra]
    proc, doc = run_iobench(args, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert doc["status"] == "ok" and doc["repetitions"][0]["read"]["verified"] is True


@pytest.mark.parametrize("mode", ["bp5", "bp4"])
def test_each_rank_fsyncs_only_the_subfiles_it_wrote(mode, iobench, tmp_path):
    """Sync is fair (issue 19): a rank fsyncs the subfiles its engine held open, and rank 0 the
    metadata; no rank fsyncs a subfile another rank wrote (on a parallel file system that is lock
    traffic, not its I/O). 4 ranks, 2 aggregators, one strace output per rank (its threads included:
    ADIOS2 writes subfiles from a thread)."""
    import shutil
    if not shutil.which("strace"):
        pytest.skip("strace not installed")
    data, traces = tmp_path / "data", tmp_path / "traces"
    data.mkdir(), traces.mkdir()
    wrap = f'exec strace -f -y -e trace=openat,fsync -o {traces}/rank$OMPI_COMM_WORLD_RANK "$@"'
    cmd = mpirun_cmd(4) + ["sh", "-c", wrap, "sh", iobench,
                           *map(str, base(data, mode, "--phase", "write", "--param", "NumAggregators=2"))]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    synced_by, written_by = {}, {}
    for f in traces.iterdir():
        text = f.read_text()
        synced_by[f.name] = set(re.findall(r"^(?:\d+ +)?fsync\(\d+<[^>]*/(data\.\d+)>\)", text, re.M))
        written_by[f.name] = set(re.findall(r'^(?:\d+ +)?openat\(.*"[^"]*/(data\.\d+)", O_\w*(?:WRONLY|RDWR)',
                                            text, re.M))
    assert set().union(*synced_by.values()) == {"data.0", "data.1"}, synced_by      # every subfile synced
    for pid, synced in synced_by.items():
        assert synced <= written_by[pid], (pid, synced, written_by[pid])           # only one's own
    assert sum(bool(s) for s in synced_by.values()) == 2, synced_by                # by its 2 writers
