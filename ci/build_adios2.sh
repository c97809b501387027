#!/usr/bin/env bash
# Build ADIOS2 (C/C++ libraries, MPI, HDF5 engine; no Python/Fortran/SST/compressors) from the
# PyPI sdist into ~/.cache/ioregress/adios2-<version>/, for iobench's adios2 backend.
# Idempotent: an install with a complete stamp file is reused; the stamp is written last.
# Usage: ci/build_adios2.sh            (env: ADIOS2_PYPI_VERSION, IOREGRESS_CACHE, JOBS)
# Prints the install prefix on the last line of stdout (pass it as -DCMAKE_PREFIX_PATH).
set -euo pipefail

# PyPI carries the full C++ source as an sdist; its version has a packaging suffix (2.11.0.0 is
# the 2.11.0 release; beware 2.10.2.100774, which is a 2.11.0 snapshot despite its name).
PYPI_VERSION="${ADIOS2_PYPI_VERSION:-2.11.0.0}"
VERSION="$(cut -d. -f1-3 <<<"$PYPI_VERSION")"     # 2.11.0 (2.10.1 stays 2.10.1)
CACHE="${IOREGRESS_CACHE:-$HOME/.cache/ioregress}"
PREFIX="$CACHE/adios2-$VERSION"
STAMP="$PREFIX/.ioregress-complete"
JOBS="${JOBS:-2}"
HDF5_PARALLEL_ROOT="${HDF5_PARALLEL_ROOT:-/usr/lib/x86_64-linux-gnu/hdf5/openmpi}"

if [[ -f "$STAMP" && -f "$PREFIX/include/adios2_c.h" ]]; then
  echo "adios2 $VERSION already installed (stamp $STAMP)" >&2
  echo "$PREFIX"
  exit 0
fi

for tool in mpicc mpicxx cmake; do
  command -v "$tool" >/dev/null || { echo "build_adios2: $tool not found (apt-get install libopenmpi-dev g++ cmake)" >&2; exit 1; }
done

WORK="$(mktemp -d "${TMPDIR:-/tmp}/adios2-build.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
start=$(date +%s)

# Only adios2 itself from source: its build requirements (scikit-build-core, ...) come as wheels,
# because pip prepares the sdist's metadata before it saves it.
SDIST_DIR="$CACHE/sdist"
mkdir -p "$SDIST_DIR"
SDIST="$SDIST_DIR/adios2-$PYPI_VERSION.tar.gz"
if [[ ! -f "$SDIST" ]]; then
  python3 -m pip download --quiet --no-deps --no-binary adios2 "adios2==$PYPI_VERSION" -d "$SDIST_DIR"
fi
[[ -f "$SDIST" ]] || { echo "build_adios2: sdist not found: $SDIST" >&2; exit 1; }
tar -xzf "$SDIST" -C "$WORK"
SRC="$WORK/adios2-$PYPI_VERSION"

off=()
for opt in BigWhoop Blosc2 BZip2 Caliper ZFP SZ LIBPRESSIO MGARD PNG CUDA Kokkos DAOS DataMan \
           DataSpaces MHS SST ZeroMQ HDF5_VOL IME Python Fortran UCX Sodium Catalyst Campaign \
           OpenSSL AWSSDK XRootD KVCACHE Endian_Reverse SysVShMem; do
  off+=("-DADIOS2_USE_$opt=OFF")
done

rm -rf "$PREFIX"
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
# Profiling stays compiled in: iobench turns it off per run (Profile=Off), and the tests check that.
cmake -S "$SRC" -B "$WORK/build" "${generator[@]}" \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$PREFIX" \
  -DBUILD_SHARED_LIBS=ON -DBUILD_TESTING=OFF -DADIOS2_BUILD_EXAMPLES=OFF \
  -DADIOS2_USE_MPI=ON -DADIOS2_USE_HDF5=ON -DADIOS2_USE_Profiling=ON \
  -DHDF5_ROOT="$HDF5_PARALLEL_ROOT" -DHDF5_PREFER_PARALLEL=TRUE \
  -DCMAKE_C_COMPILER=mpicc -DCMAKE_CXX_COMPILER=mpicxx \
  "${off[@]}" >&2
cmake --build "$WORK/build" -j "$JOBS" >&2
cmake --install "$WORK/build" >&2

# A usable install has the MPI C library and the HDF5 engine; fail loudly otherwise.
ls "$PREFIX"/lib*/libadios2_c_mpi.so >/dev/null
grep -q '#define ADIOS2_HAVE_HDF5' "$PREFIX/include/adios2/common/ADIOSConfig.h" ||
  { echo "build_adios2: HDF5 engine missing from the build" >&2; exit 1; }

end=$(date +%s)
{
  echo "version=$VERSION"
  echo "pypi_sdist=adios2-$PYPI_VERSION.tar.gz"
  echo "built=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "wall_seconds=$((end - start))"
  echo "hdf5_root=$HDF5_PARALLEL_ROOT"
} > "$STAMP"
echo "adios2 $VERSION installed in $((end - start)) s, $(du -sh "$PREFIX" | cut -f1)" >&2
echo "$PREFIX"
