#!/usr/bin/env bash
# Build IOR (POSIX, MPIIO, HDF5 APIs; also mdtest) into ~/.cache/ioregress/ior-<version>/, for the
# IOR side-by-side checks (reframe_checks/ior_compare.py; IOR_ROOT). ~20 s on 2 cores.
# Source: ior-*.tar.gz in $IOREGRESS_SOURCES, else the upstream commit below from GitHub; autotools
# (autoconf automake, from apt) make its configure. Idempotent (stamp file written last). Prints
# the prefix on the last line of stdout; exit 3 when no source could be had.
set -euo pipefail
NAME=ior
VERSION=4.1.0-dev-5fcf0ba
ARCHIVE_GLOB='ior-4.1.0-dev-5fcf0ba*.tar.gz'
URL=https://github.com/hpc/ior/archive/5fcf0ba.tar.gz
source "$(dirname "${BASH_SOURCE[0]}")/lib/build_common.sh"
PREFIX="$CACHE/$NAME-$VERSION"

if stamp_ok "$PREFIX" bin/ior; then echo "$PREFIX"; exit 0; fi
for tool in mpicc autoreconf; do
    command -v $tool >/dev/null || { echo "build_ior: $tool not found (apt-get install libopenmpi-dev autoconf automake)" >&2; exit 1; }
done
begin_build
cd "$WORK/src"
{ ./bootstrap && ./configure --prefix="$PREFIX" --with-hdf5 MPICC=mpicc \
      CPPFLAGS="-I$HDF5_PARALLEL_ROOT/include" LDFLAGS="-L$HDF5_PARALLEL_ROOT/lib -Wl,-rpath,$HDF5_PARALLEL_ROOT/lib" &&
  make -j "$JOBS" && make install; } >"$WORK/build.log" 2>&1 || { tail -n 30 "$WORK/build.log" >&2; exit 1; }
# The checks compare against these APIs; an IOR without HDF5 would skip the hdf5 pairs silently.
apis=$("$PREFIX/bin/ior" -h 2>&1 | grep -o 'API for I/O \[[^]]*\]' || true)
for api in POSIX MPIIO HDF5; do
    grep -q "$api" <<<"$apis" || { echo "build_ior: IOR built without $api ($apis)" >&2; exit 1; }
done
write_stamp "$PREFIX" "$start" "apis=$apis"
echo "$PREFIX"
