#!/usr/bin/env bash
# Run the quick suite on the embedded `local` system, make its report and end with the verdict.
#   IOREGRESS_RESULTS  results directory (default: <repo>/results/quick-<UTC time>, and
#                      <repo>/results/latest then points at it, as after a nightly)
#   extra arguments go to reframe (e.g. -n mpiio, -P size=32)
# What ci/setup.sh built into ~/.cache/ioregress is used as a site's modules would be: SIONlib and
# IOR (their checks run), darshan-runtime (every iobench run captured: one log per run, its counters
# asserted; the Darshan index is linked from the page).
# Exit status: reframe's (0 every check passed), 1 when a postprocess step failed.
set -uo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PYTHON=${PYTHON:-python3}
default_out=$REPO/results/quick-$(date -u +%Y%m%dT%H%M%SZ)
OUT=${IOREGRESS_RESULTS:-$default_out}
# the configs and checks import this checkout's installed packages (ci/setup.sh: pip install -e .)
"$PYTHON" "$REPO/ci/installed_here.py" || exit 2
mkdir -p "$OUT" || exit 2
OUT=$(cd "$OUT" && pwd)
[[ "$OUT" == "$default_out" ]] && ln -sfn "$(basename "$OUT")" "$REPO/results/latest"
cd "$OUT" || exit 2   # reframe.log is written to the working directory
# SIONLIB_ROOT, IOR_ROOT, IOREGRESS_DARSHAN_LIB, IOREGRESS_SPACK_ROOT of the cache's builds (values
# already set win): iobench_lib/installed.py built_here()
exports=$("$PYTHON" -m iobench_lib.installed) || exit 2
eval "$exports"

# reframe.out keeps the console (the skip reasons are only there, not in report.json)
reframe -C "$REPO/configs/settings.py" -c "$REPO/reframe_checks" -r --tag quick --system local \
    --prefix "$OUT" --perflogdir "$OUT/perflogs" --report-file "$OUT/report.json" "$@" \
    2>&1 | tee "$OUT/reframe.out"
rc=${PIPESTATUS[0]}

# Postprocess this run (its own perflogs: one night, so no regression can be judged yet).
pp() { (cd "$REPO" && "$PYTHON" -m postprocess "$@"); }
post_rc=0
mkdir -p "$OUT/post"
# The Darshan index first: the report links it (post/darshan/index.html beside post/report).
pp darshan-index "$OUT" -o "$OUT/post/darshan" -j 2 --quiet >"$OUT/post/darshan.txt" 2>&1 \
    || { echo "quick.sh: the Darshan index failed: $(tail -n 1 "$OUT/post/darshan.txt")"; post_rc=1; }
if [[ -d "$OUT/perflogs" ]]; then
    pp detect --perflogs "$OUT/perflogs" --json "$OUT/post/detect.json" >"$OUT/post/detect.txt" 2>&1
    # stderr stays on the terminal: a progress bar while the figures are drawn, notes on figures
    # that had no data
    pp report --perflogs "$OUT/perflogs" -o "$OUT/post/report" --run "$OUT" \
        >"$OUT/post/report.txt" \
        || { echo "quick.sh: the report failed (see above)"; post_rc=1; }
fi

ndarshan=$(find "$OUT/output" -name '*.darshan' 2>/dev/null | wc -l)
echo
echo "ioregress quick suite: reframe exit status $rc"
echo "  results (outputs, result.json per test): $OUT/output"
echo "  perflogs:                                $OUT/perflogs"
echo "  run report, reframe log:                 $OUT/report.json, $OUT/reframe.log"
if ((ndarshan)); then
    echo "  Darshan logs ($ndarshan, one per iobench run): $OUT/output/*/*/*/*/iobench*.darshan"
    echo "  Darshan index:                           $OUT/post/darshan/index.html"
else
    echo "  Darshan: no log ($(head -n 1 "$OUT/post/darshan.txt" 2>/dev/null | cut -c1-200))"
fi
echo
pp summary --run "$OUT"
((rc == 0)) && rc=$post_rc
exit $rc
