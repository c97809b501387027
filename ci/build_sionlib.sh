#!/usr/bin/env bash
# Build SIONlib (C, MPI; no Fortran/C++/parutils) into ~/.cache/ioregress/sionlib-<version>/, for
# iobench's sionlib backend (found through SIONLIB_ROOT/bin/sionconfig). ~5 s on 2 cores.
# Source: sionlib-*.tar.gz in $IOREGRESS_SOURCES, else the upstream commit below from GitHub.
# Idempotent (stamp file written last). Prints the prefix on the last line of stdout; exit 3 when
# no source could be had (one line on stderr says so).
set -euo pipefail
NAME=sionlib
VERSION=1.7.6
ARCHIVE_GLOB='sionlib-1.7.6*.tar.gz'
URL=https://github.com/ikitayama/sionlib/archive/51db031.tar.gz   # 1.7.6 + Fujitsu patches
source "$(dirname "${BASH_SOURCE[0]}")/lib/build_common.sh"
PREFIX="$CACHE/$NAME-$VERSION"

if stamp_ok "$PREFIX" bin/sionconfig lib/liblsionmpi_64.a; then echo "$PREFIX"; exit 0; fi
command -v mpicc >/dev/null || { echo "build_sionlib: mpicc not found (apt-get install libopenmpi-dev)" >&2; exit 1; }
begin_build
cd "$WORK/src"
# its own configure script (not autoconf): it names a build-<platform> folder to make in
./configure --prefix="$PREFIX" --disable-fortran --disable-cxx --disable-parutils --mpi=openmpi \
    >"$WORK/configure.log" 2>&1 || { tail -n 20 "$WORK/configure.log" >&2; exit 1; }
cd "$WORK"/src/build-*
make -j "$JOBS" >"$WORK/make.log" 2>&1 && make install >>"$WORK/make.log" 2>&1 ||
    { tail -n 30 "$WORK/make.log" >&2; exit 1; }
"$PREFIX/bin/sionconfig" --libs --mpi --c --64 >/dev/null
write_stamp "$PREFIX" "$start"
echo "$PREFIX"
