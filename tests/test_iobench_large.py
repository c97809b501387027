"""64-bit transfers: one rank moves a block of more than 2^31-1 bytes (and elements beyond INT_MAX bytes
offsets) through posix, mpiio and hdf5. Needs ~3 GiB RAM and ~3 GiB disk per case and minutes: opt-in
with `pytest -m slow tests/test_iobench_large.py`."""
import pytest

SIZE = 724           # 724^3 doubles = 3,036,027,392 bytes (2.83 GiB) per rank, > 2^31 - 1
CASES = [("posix", "fpp"), ("posix", "shared"), ("mpiio", "independent"), ("mpiio", "collective"),
         ("hdf5", "collective")]


@pytest.mark.slow
@pytest.mark.parametrize("backend,mode", CASES, ids=["-".join(c) for c in CASES])
def test_block_over_2GiB_round_trip(backend, mode, run_iobench, iobench_backends, tmp_path):
    if backend not in iobench_backends:
        pytest.skip(f"{backend} not compiled in")
    proc, doc = run_iobench(["--backend", backend, "--mode", mode, "--size", SIZE, "--dir", tmp_path],
                            np=1, timeout=1800)
    assert proc.returncode == 0, proc.stderr
    rep = doc["repetitions"][0]
    assert doc["bytes_per_rank"] == SIZE ** 3 * 8 > 2 ** 31
    assert rep["write"]["bytes"] == rep["read"]["bytes"] == SIZE ** 3 * 8
    assert rep["read"]["verified"] is True
    assert list(tmp_path.iterdir()) == []
