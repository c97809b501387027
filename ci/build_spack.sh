#!/usr/bin/env bash
# Spack 1.1 and its package repository (spack-packages v2025.11.0) into ~/.cache/ioregress/, set
# up to concretize without network: clingo comes from PyPI (ci/setup.sh pins it), the builtin
# repository is the unpacked archive (Spack 1.x would otherwise git-clone it), no bootstrapping.
# Then installs spack_env/systems/local (Debian's OpenMPI, HDF5, CMake, gcc as externals: only
# iobench is built, from this checkout's src/). Spack's install tree is in the cache, so a second
# run reuses it (Spack rebuilds iobench only when src/ changed).
# Sources: spack-1.1.0*.tar.gz and spack-packages-2025.11.0*.tar.gz in $IOREGRESS_SOURCES, else
# the GitHub releases. Prints Spack's root on the last line of stdout; exit 3 when no source.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$REPO/ci/lib/build_common.sh"
SPACK_VERSION=1.1.0
PACKAGES_VERSION=2025.11.0
ROOT="$CACHE/spack-$SPACK_VERSION"
PKGS="$CACHE/spack-packages-$PACKAGES_VERSION"

unpack() {   # unpack NAME VERSION GLOB URL DEST: into DEST once (stamp written last)
    NAME=$1 VERSION=$2 ARCHIVE_GLOB=$3 URL=$4
    stamp_ok "$5" && return 0
    rm -rf "$5"
    local start; start=$(date +%s)
    fetch_source "$5"
    write_stamp "$5" "$start"
}
unpack spack "$SPACK_VERSION" "spack-$SPACK_VERSION*.tar.gz" \
    "https://github.com/spack/spack/archive/refs/tags/v$SPACK_VERSION.tar.gz" "$ROOT"
unpack spack-packages "$PACKAGES_VERSION" "spack-packages-$PACKAGES_VERSION*.tar.gz" \
    "https://github.com/spack/spack-packages/archive/refs/tags/v$PACKAGES_VERSION.tar.gz" "$PKGS"

# Spack's own site scope (etc/spack of this Spack only): the builtin repository from the archive,
# no bootstrapping from the network (clingo is importable), the install tree inside this root.
# (written only when different: a second setup changes nothing)
same_or_write() { [[ -f "$1" && "$(cat "$1")" == "$2" ]] || printf '%s\n' "$2" > "$1"; }
same_or_write "$ROOT/etc/spack/repos.yaml" "repos:
  builtin: $PKGS/repos/spack_repo/builtin"
same_or_write "$ROOT/etc/spack/bootstrap.yaml" "bootstrap:
  enable: false"
python3 -c 'import clingo' 2>/dev/null ||
    { echo "build_spack: python3 cannot import clingo (pip install clingo; ci/setup.sh pins it)" >&2; exit 1; }

# Install the local environment: iobench from src/ (a develop spec), everything else external.
# The shipped lock names the src/ of the checkout it was made in: re-concretized once for this
# one (as the ReFrame build fixture does, iobench_lib/spack_build.py). Output goes to a log; its
# tail is shown when it fails.
ENV_DIR="$REPO/spack_env/systems/local"
log="$CACHE/spack-install.log"
start=$(date +%s)
locked=$(python3 -c 'import json, sys
nodes = json.load(open(sys.argv[1]))["concrete_specs"].values()
print(next((n["parameters"].get("dev_path", "") for n in nodes if n["name"] == "iobench"), ""))' \
    "$ENV_DIR/spack.lock" 2>/dev/null || true)
if [[ "$locked" != "$REPO/src" ]] &&
        ! "$ROOT/bin/spack" -e "$ENV_DIR" concretize -f >"$log" 2>&1; then
    tail -n 30 "$log" >&2
    echo "build_spack: spack -e spack_env/systems/local concretize -f failed (log: $log)" >&2
    exit 1
fi
if ! "$ROOT/bin/spack" -e "$ENV_DIR" install -j "$JOBS" >>"$log" 2>&1; then
    tail -n 30 "$log" >&2
    echo "build_spack: spack -e spack_env/systems/local install failed (log: $log)" >&2
    exit 1
fi
echo "spack: spack_env/systems/local installed in $(( $(date +%s) - start )) s (log: $log)" >&2
echo "$ROOT"
