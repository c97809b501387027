# Sourced by ci/build_*.sh: where a source archive comes from and how a finished install is marked.
# A build script sets NAME, VERSION, ARCHIVE_GLOB (file name in $IOREGRESS_SOURCES) and URL
# (upstream release) before calling these; the install is $CACHE/$NAME-$VERSION with a stamp file
# written last, so an interrupted build is redone and a finished one is reused in milliseconds.
CACHE="${IOREGRESS_CACHE:-$HOME/.cache/ioregress}"
JOBS="${JOBS:-2}"
HDF5_PARALLEL_ROOT="${HDF5_PARALLEL_ROOT:-/usr/lib/x86_64-linux-gnu/hdf5/openmpi}"

stamp_ok() {   # stamp_ok PREFIX FILE...: the stamp and every named file exist
    local prefix=$1; shift
    [[ -f "$prefix/.ioregress-complete" ]] || return 1
    local f; for f in "$@"; do [[ -e "$prefix/$f" ]] || return 1; done
}

# fetch_source DEST: unpack the archive (one top folder, stripped) into DEST. Looks in
# $IOREGRESS_SOURCES first, then downloads $URL into $CACHE/sources. Exit status 3 (after one line
# on stderr saying what is left out and why) when neither works: the caller's caller decides.
fetch_source() {
    local dest=$1 archive=""
    if [[ -n "${IOREGRESS_SOURCES:-}" ]]; then
        [[ -d "$IOREGRESS_SOURCES" ]] || { echo "$NAME: IOREGRESS_SOURCES=$IOREGRESS_SOURCES is not a directory" >&2; exit 2; }
        archive=$(compgen -G "$IOREGRESS_SOURCES/$ARCHIVE_GLOB" | sort | tail -n 1 || true)
    fi
    if [[ -z "$archive" ]]; then
        mkdir -p "$CACHE/sources"
        archive="$CACHE/sources/$NAME-$VERSION.tar.gz"
        if [[ ! -s "$archive" ]]; then
            if ! curl -fsSL --connect-timeout 15 --max-time 600 -o "$archive.part" "$URL" 2>/dev/null; then
                rm -f "$archive.part"
                echo "$NAME $VERSION left out: no $ARCHIVE_GLOB in \$IOREGRESS_SOURCES (${IOREGRESS_SOURCES:-unset}) and $URL unreachable" >&2
                exit 3
            fi
            mv "$archive.part" "$archive"
        fi
    fi
    mkdir -p "$dest"
    tar -xzf "$archive" -C "$dest" --strip-components=1
    echo "$NAME: source $archive" >&2
}

# begin_build: a work folder (removed on exit) with the source unpacked in $WORK/src, $PREFIX
# emptied, the clock started ($start, for write_stamp).
begin_build() {
    WORK=$(mktemp -d "${TMPDIR:-/tmp}/$NAME-build.XXXXXX")
    trap 'rm -rf "$WORK"' EXIT
    start=$(date +%s)
    fetch_source "$WORK/src"
    rm -rf "$PREFIX"
}

write_stamp() {   # write_stamp PREFIX START_SECONDS [key=value...]
    local prefix=$1 start=$2; shift 2
    { echo "name=$NAME"; echo "version=$VERSION"; echo "built=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
      echo "wall_seconds=$(( $(date +%s) - start ))"; printf '%s\n' "$@"; } > "$prefix/.ioregress-complete"
    echo "$NAME $VERSION installed in $(( $(date +%s) - start )) s: $prefix" >&2
}
