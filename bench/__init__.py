"""Benchmarks with figures (README.md "Figures"), run from the repository root as modules:

    python3 -m bench.postprocess_speed --lines 1000000
    python3 -m bench.darshan_index_speed 400 --iobench-only
    python3 -m bench.ior_pairs --iobench build/iobench --ior /opt/ior/bin/ior --dir /scratch/x
    python3 -m bench.detection --trials 12 --jobs 2

They import `postprocess` and `iobench_lib` (installed by ci/setup.sh) and, for the real-night
replay, `tests.support` (hence the repository root as the working directory).
"""
