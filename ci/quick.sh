#!/usr/bin/env bash
# Run the quick suite on the embedded `local` system and say where everything went.
#   IOREGRESS_RESULTS  results directory (default: <repo>/results/quick-<UTC time>)
#   extra arguments go to reframe (e.g. -n mpiio, -P size=32)
set -uo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${IOREGRESS_RESULTS:-$REPO/results/quick-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$OUT" || exit 2
OUT=$(cd "$OUT" && pwd)
cd "$OUT" || exit 2   # reframe.log is written to the working directory

reframe -C "$REPO/configs/settings.py" -c "$REPO/reframe_checks" -r --tag quick --system local \
    --prefix "$OUT" --perflogdir "$OUT/perflogs" --report-file "$OUT/report.json" "$@"
rc=$?

echo
echo "ioregress quick suite: reframe exit status $rc"
echo "  results (outputs, result.json per test): $OUT/output"
echo "  perflogs:                                $OUT/perflogs"
echo "  run report:                              $OUT/report.json"
echo "  reframe log:                             $OUT/reframe.log"
exit $rc
