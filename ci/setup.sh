#!/usr/bin/env bash
# Set up a fresh Debian 12 (as root) for ioregress and build iobench. Idempotent: installs only what
# is missing, runs apt-get update at most once, rebuilds iobench incrementally.
#   IOBENCH_BUILD_DIR  where iobench is built (default: <repo>/build)
#   IOREGRESS_NO_BUILD=1  install only
#   IOREGRESS_SOURCES  folder of upstream source archives (Darshan, IOR, SIONlib, Spack and its
#                      packages; file names in ci/build_*.sh) for machines without GitHub access;
#                      unset or missing an archive: downloaded from the project's release
#   IOREGRESS_CACHE    where the tools are built (default ~/.cache/ioregress)
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${IOBENCH_BUILD_DIR:-$REPO/build}
if [[ -n "${IOREGRESS_SOURCES:-}" && ! -d "$IOREGRESS_SOURCES" ]]; then
    echo "ci/setup.sh: IOREGRESS_SOURCES='$IOREGRESS_SOURCES' is not a directory" >&2; exit 2
fi

APT_PACKAGES=(openmpi-bin libopenmpi-dev libhdf5-openmpi-dev hdf5-tools fio cmake pkg-config)
# Headless browser for the Darshan index test (tests/test_darshan_index.py opens the page).
APT_PACKAGES+=(chromium)
# Pinned Python packages (what the suite is tested with).
PIP_PACKAGES=(reframe-hpc==4.10.4 darshan==3.5.0 mpi4py==4.1.2 matplotlib==3.11.2 numpy==2.4.6
              pyyaml==6.0.3 pytest==9.2.0)
# The tests run in parallel (pyproject's addopts `-n auto`, groups in tests/conftest.py).
PIP_PACKAGES+=(pytest-xdist==3.8.0)
# The report (postprocess/report): templates, inline interactive history, progress; its browser test.
APT_PACKAGES+=(chromium-driver)
PIP_PACKAGES+=(jinja2==3.1.6 bokeh==3.9.2 tqdm==4.70.1 selenium==4.40.0)   # selenium 4.52 needs an unreleased certifi
# Nightly verdicts (postprocess/detect): rank tests, MAD, t tails, Benjamini-Hochberg.
PIP_PACKAGES+=(scipy==1.17.1)
# The results store (postprocess/history/store.py): DuckDB reads and writes its Parquet files; the
# DuckDB CLI of the same version is what a site queries it with (docs/operations.md, its test).
PIP_PACKAGES+=(duckdb==1.5.6 duckdb-cli==1.5.6)
# Darshan insights (postprocess/darshan/insights.py): Drishti's analysis of every log.
PIP_PACKAGES+=(drishti-io==0.8)
# Apache Otava's E-divisive: the change-point verdict bench/production_replay.py sets beside ours. Installed without
# its dependencies: it pins numpy 2.2 / scipy 1.16 for its service parts (BigQuery, Grafana,
# Slack...), while otava.analysis needs only numpy and scipy.stats, which the lines above pin.
PIP_NODEPS=(apache-otava==0.8.0)
# Results where sites look (docs/nightly.md): Apprise sends the red/green message; aiosmtpd is the
# real SMTP server its test talks to; VictoriaMetrics is the time-series store the export test runs.
PIP_PACKAGES+=(apprise==2.2.0 aiosmtpd==1.4.6)
# ioregress itself is installed editable without build isolation (below): setuptools >= 64 builds
# it (Debian 12 has 66), and setuptools < 70 needs wheel for that (0.46 on relies on setuptools 70).
PIP_PACKAGES+=(wheel==0.45.1)
APT_PACKAGES+=(victoria-metrics)
# Tests that read what iobench asks of the kernel (O_DIRECT opens, each ADIOS2 rank's fsyncs): strace;
# without it they skip, and a fresh image need not have it.
APT_PACKAGES+=(strace)
# Darshan and IOR come as git archives (ci/build_darshan.sh, ci/build_ior.sh): autotools make
# their configure scripts.
APT_PACKAGES+=(autoconf automake libtool)
# Spack concretizes with clingo; from PyPI it needs no bootstrapping (ci/build_spack.sh).
PIP_PACKAGES+=(clingo==5.8.0)

APT_UPDATED=0
apt_install() {   # apt-get update at most once per run
    export DEBIAN_FRONTEND=noninteractive
    if ((APT_UPDATED == 0)); then apt-get update -q; APT_UPDATED=1; fi
    apt-get install -y -q --no-install-recommends "$@"
}

missing=()
for p in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
    echo "ci/setup.sh: apt-get install ${missing[*]}"
    apt_install "${missing[@]}"
fi

PY=${PYTHON:-python3}
if ! "$PY" -m pip --version >/dev/null 2>&1; then
    apt_install python3-pip python3-dev
fi
PIP_FLAGS=()
# Debian's own python3 is "externally managed" (PEP 668); CI boxes install into it on purpose.
if [[ -e "$("$PY" -c 'import sysconfig; print(sysconfig.get_path("stdlib"))')/EXTERNALLY-MANAGED" ]]; then
    PIP_FLAGS+=(--break-system-packages)
fi
# One interpreter start per list for the version checks (pip show per package is slow).
pip_specs_missing() {
    "$PY" - "$@" <<'PYEOF'
import sys
from importlib import metadata
for spec in sys.argv[1:]:
    name, want = spec.split('==')
    try:
        have = metadata.version(name)
    except metadata.PackageNotFoundError:
        have = None
    if have != want:
        print(spec)
PYEOF
}
# ADIOS2 from its PyPI sdist into ~/.cache/ioregress/adios2-<version>/ (~5 min the first time on
# 2 cores, reused afterwards): started here, beside pip and the other tools' builds, whose serial
# steps (downloads, configure scripts, Spack's solver) it overlaps; its log is in the cache.
# IOREGRESS_NO_ADIOS2=1 skips it (the adios2 tests then skip).
CACHE=${IOREGRESS_CACHE:-$HOME/.cache/ioregress}
ADIOS2_PID=
if [[ "${IOREGRESS_NO_ADIOS2:-0}" != 1 ]]; then
    command -v g++ >/dev/null || apt_install g++     # ADIOS2 is C++
    mkdir -p "$CACHE"
    # its own process group, so that a setup that stops early stops the whole build too
    setsid "$REPO/ci/build_adios2.sh" >"$CACHE/build-adios2.prefix" 2>"$CACHE/build-adios2.log" &
    ADIOS2_PID=$!
    trap '[[ -z "$ADIOS2_PID" ]] || kill -- -"$ADIOS2_PID" 2>/dev/null' EXIT
fi

mapfile -t pip_missing < <(pip_specs_missing "${PIP_PACKAGES[@]}")
if ((${#pip_missing[@]})); then
    echo "ci/setup.sh: pip install ${pip_missing[*]}"
    "$PY" -m pip install -q "${PIP_FLAGS[@]}" "${pip_missing[@]}"
fi
mapfile -t nodeps_missing < <(pip_specs_missing "${PIP_NODEPS[@]}")
if ((${#nodeps_missing[@]})); then
    echo "ci/setup.sh: pip install --no-deps ${nodeps_missing[*]}"
    "$PY" -m pip install -q --no-deps "${PIP_FLAGS[@]}" "${nodeps_missing[@]}"
fi

# ioregress itself, editable: `postprocess` and `iobench_lib` (reframe_checks/iobench_lib) then import
# from anywhere, as the system configs, the checks, tests and bench do. Its dependencies are the pins
# above (--no-deps); skipped when this checkout is what is installed already.
if ! "$PY" "$REPO/ci/installed_here.py" 2>/dev/null; then
    echo "ci/setup.sh: pip install -e $REPO"
    "$PY" -m pip install -q --no-deps --no-build-isolation "${PIP_FLAGS[@]}" -e "$REPO"
    "$PY" "$REPO/ci/installed_here.py"
fi

CMAKE_EXTRA=()

# The tools the suite runs beside, each built once into the cache (stamp file; a second setup
# reuses them in milliseconds): darshan-runtime with its HDF5 module (the quick suite captures
# every iobench run), SIONlib (iobench's sionlib backend), IOR (the side-by-side checks), Spack
# with its package repository (spack_env/systems/local installed: iobench built through Spack).
# Exit 3 from a build script = no source archive and no network: one line said so; setup goes on.
tool_prefix() {   # tool_prefix SCRIPT: the install prefix, "" when left out (status 3)
    local out rc=0
    out=$("$REPO/ci/$1") || rc=$?
    ((rc == 0)) && { tail -n 1 <<<"$out"; return 0; }
    ((rc == 3)) && return 0
    echo "ci/setup.sh: ci/$1 failed (status $rc)" >&2; exit 1
}
[[ -z "${IOREGRESS_SOURCES:-}" ]] || export IOREGRESS_SOURCES
tool_prefix build_darshan.sh >/dev/null
tool_prefix build_ior.sh >/dev/null
SIONLIB_PREFIX=$(tool_prefix build_sionlib.sh)
[[ -z "$SIONLIB_PREFIX" ]] || CMAKE_EXTRA+=("-DSIONLIB_ROOT=$SIONLIB_PREFIX")
tool_prefix build_spack.sh >/dev/null

if [[ -n "$ADIOS2_PID" ]]; then
    adios2_rc=0
    wait "$ADIOS2_PID" || adios2_rc=$?
    ADIOS2_PID=
    if ((adios2_rc != 0)); then
        tail -n 30 "$CACHE/build-adios2.log" >&2
        echo "ci/setup.sh: ci/build_adios2.sh failed (log: $CACHE/build-adios2.log)" >&2; exit 1
    fi
    tail -n 1 "$CACHE/build-adios2.log" >&2
    CMAKE_EXTRA+=("-DCMAKE_PREFIX_PATH=$(tail -n 1 "$CACHE/build-adios2.prefix")")
fi

if [[ "${IOREGRESS_NO_BUILD:-0}" != 1 ]]; then
    cmake -S "$REPO/src" -B "$BUILD_DIR" "${CMAKE_EXTRA[@]}" >/dev/null
    cmake --build "$BUILD_DIR" -j2
    echo "ci/setup.sh: iobench built: $BUILD_DIR/iobench (backends: $(cat "$BUILD_DIR/iobench-features.txt"))"
fi
