#!/usr/bin/env bash
# Run the quick suite on the embedded `local` system, make its report and end with the verdict.
#   IOREGRESS_RESULTS  results directory (default: <repo>/results/quick-<UTC time>)
#   extra arguments go to reframe (e.g. -n mpiio, -P size=32)
# Exit status: reframe's (0 every check passed).
set -uo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PYTHON=${PYTHON:-python3}
OUT=${IOREGRESS_RESULTS:-$REPO/results/quick-$(date -u +%Y%m%dT%H%M%SZ)}
# the configs and checks import this checkout's installed packages (ci/setup.sh: pip install -e .)
"$PYTHON" "$REPO/ci/installed_here.py" || exit 2
mkdir -p "$OUT" || exit 2
OUT=$(cd "$OUT" && pwd)
cd "$OUT" || exit 2   # reframe.log is written to the working directory

# reframe.out keeps the console (the skip reasons are only there, not in report.json)
reframe -C "$REPO/configs/settings.py" -c "$REPO/reframe_checks" -r --tag quick --system local \
    --prefix "$OUT" --perflogdir "$OUT/perflogs" --report-file "$OUT/report.json" "$@" \
    2>&1 | tee "$OUT/reframe.out"
rc=${PIPESTATUS[0]}

# Postprocess this run (its own perflogs: one night, so no regression can be judged yet).
pp() { (cd "$REPO" && "$PYTHON" -m postprocess "$@"); }
mkdir -p "$OUT/post"
if [[ -d "$OUT/perflogs" ]]; then
    pp detect --perflogs "$OUT/perflogs" --json "$OUT/post/detect.json" >"$OUT/post/detect.txt" 2>&1
    # stderr stays on the terminal: a progress bar while the figures are drawn, notes on figures
    # that had no data
    pp report --perflogs "$OUT/perflogs" -o "$OUT/post/report" --run "$OUT" \
        >"$OUT/post/report.txt" \
        || echo "quick.sh: the report failed (see above)"
fi

echo
echo "ioregress quick suite: reframe exit status $rc"
echo "  results (outputs, result.json per test): $OUT/output"
echo "  perflogs:                                $OUT/perflogs"
echo "  run report, reframe log:                 $OUT/report.json, $OUT/reframe.log"
echo
pp summary --run "$OUT"
exit $rc
