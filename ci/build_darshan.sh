#!/usr/bin/env bash
# Build darshan-runtime (POSIX, MPI-IO, STDIO, DXT, HDF5 modules; LD_PRELOAD-able libdarshan.so)
# into ~/.cache/ioregress/darshan-<version>/, against Debian's OpenMPI and parallel HDF5: what a
# site's darshan module provides. The logs are read with PyDarshan (pip darshan, same version), so
# darshan-util is not built. ~1 min on 2 cores.
# Source: darshan-*.tar.gz in $IOREGRESS_SOURCES, else the upstream release; autotools (autoconf
# automake libtool, from apt) make its configure. Idempotent (stamp file written last). Prints the
# prefix on the last line of stdout; exit 3 when no source could be had.
set -euo pipefail
NAME=darshan
VERSION=3.5.0
ARCHIVE_GLOB='darshan-3.5.0*.tar.gz'
URL=https://github.com/darshan-hpc/darshan/archive/refs/tags/darshan-3.5.0.tar.gz
source "$(dirname "${BASH_SOURCE[0]}")/lib/build_common.sh"
PREFIX="$CACHE/$NAME-$VERSION"

if stamp_ok "$PREFIX" lib/libdarshan.so; then echo "$PREFIX"; exit 0; fi
for tool in mpicc autoreconf libtoolize h5dump; do
    command -v $tool >/dev/null || { echo "build_darshan: $tool not found (apt-get install libopenmpi-dev autoconf automake libtool hdf5-tools)" >&2; exit 1; }
done
[[ -f "$HDF5_PARALLEL_ROOT/include/H5pubconf.h" ]] ||
    { echo "build_darshan: no parallel HDF5 at HDF5_PARALLEL_ROOT=$HDF5_PARALLEL_ROOT (apt-get install libhdf5-openmpi-dev)" >&2; exit 1; }
begin_build
# Darshan's configure wants one HDF5 prefix with bin/h5dump (for the version), include/ and lib/;
# Debian splits them, so a folder of links, kept in the install because lib/ becomes its rpath.
H5="$PREFIX/share/hdf5-parallel"
mkdir -p "$H5/bin"
ln -s "$HDF5_PARALLEL_ROOT/include" "$HDF5_PARALLEL_ROOT/lib" "$H5/"
ln -s "$(command -v h5dump)" "$H5/bin/h5dump"
cd "$WORK/src"
# Log path: DARSHAN_LOGFILE (set per run by the checks) wins; DARSHAN_LOG_DIR_PATH otherwise.
{ ./prepare.sh && mkdir build && cd build &&
  ../configure --prefix="$PREFIX" --disable-darshan-util \
      --with-log-path-by-env=DARSHAN_LOG_DIR_PATH --with-jobid-env=SLURM_JOB_ID \
      --enable-hdf5-mod --with-hdf5="$H5" CC=mpicc &&
  make -j "$JOBS" && make install; } >"$WORK/build.log" 2>&1 || { tail -n 30 "$WORK/build.log" >&2; exit 1; }
# (grep the whole listing: grep -q would end the pipe early and pipefail would call it a failure)
[[ $(nm -D "$PREFIX/lib/libdarshan.so" | grep -c ' T H5Fcreate$') == 1 ]] ||
    { echo "build_darshan: libdarshan.so has no HDF5 module (no H5Fcreate wrapper)" >&2; exit 1; }
write_stamp "$PREFIX" "$start" "hdf5_root=$HDF5_PARALLEL_ROOT"
echo "$PREFIX"
