#!/usr/bin/env bash
# Run the ioregress suite once and postprocess it: THE entry point for CI pipelines (GitLab nightly,
# GitHub quick, .ci/run) and for a site engineer's cron job.
#
#   ci/nightly.sh [--tag quick|nightly] [--system NAME] [--results DIR] [--name REGEX]... [-- REFRAME_ARGS...]
#
#   --tag      which suite (default: quick; env IOREGRESS_TAG)
#   --system   ReFrame system from configs/systems/ (default: picked by hostname; env IOREGRESS_SYSTEM),
#              e.g. local-slurm for the one-node Slurm of ci/slurm/start.sh
#   --results  results tree (default: <repo>/results; env IOREGRESS_RESULTS_ROOT). Layout:
#                perflogs/<system>/<partition>/<check>.log   history, appended by every run, never rewritten
#                runs/<UTC stamp>-<system>-<tag>/             this run: report.json, junit.xml, reframe.out,
#                                                             reframe.log, output/, stage/ (failures only),
#                                                             post/ (detection, plots, HTML, Darshan index)
#                latest -> runs/<this run>
#   --name     ReFrame -n filter (repeatable), to run a subset
#   after --   passed to reframe unchanged
#
# Exit status: 0 all checks passed and no regression detected; 1 a check failed (sanity, performance
# reference or ReFrame error) or a postprocess step failed; 3 checks passed but postprocess detected a
# regression; 2 bad usage (one line, nothing created).
# Postprocess commands that do not exist (yet) in this checkout are skipped with a message.
set -uo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-python3}"
REFRAME="${REFRAME:-reframe}"

usage_error() { echo "nightly.sh: error: $*" >&2; exit 2; }
say() { echo "nightly.sh: $*"; }

tag="${IOREGRESS_TAG:-quick}"
system="${IOREGRESS_SYSTEM:-}"
results="${IOREGRESS_RESULTS_ROOT:-$REPO/results}"
names=()
extra=()
while (($#)); do
    case "$1" in
        --tag) (($# >= 2)) || usage_error "option '--tag' needs a value"; tag="$2"; shift 2 ;;
        --system) (($# >= 2)) || usage_error "option '--system' needs a value"; system="$2"; shift 2 ;;
        --results) (($# >= 2)) || usage_error "option '--results' needs a value"; results="$2"; shift 2 ;;
        --name) (($# >= 2)) || usage_error "option '--name' needs a value"; names+=(-n "$2"); shift 2 ;;
        -h|--help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        --) shift; extra=("$@"); break ;;
        *) usage_error "unknown option '$1'" ;;
    esac
done
[[ "$tag" == quick || "$tag" == nightly ]] || usage_error "unknown tag '$tag' (quick or nightly)"
[[ -z "$system" || "$system" =~ ^[A-Za-z0-9_-]+$ ]] || usage_error "bad system name '$system'"
command -v "$REFRAME" >/dev/null || usage_error "reframe not found: '$REFRAME'"
[[ -z "$results" ]] && usage_error "empty results directory ''"
if [[ -e "$results" && ! -d "$results" ]]; then usage_error "results path is not a directory '$results'"; fi

config="$REPO/configs/settings.py"
sysargs=()
if [[ -n "$system" ]]; then
    sysargs=(--system "$system")
    # Ask ReFrame itself: one line naming the system instead of its error, and nothing created.
    if ! msg="$("$REFRAME" -C "$config" "${sysargs[@]}" --show-config systems/0/name 2>&1)"; then
        grep -q 'could not find a configuration entry' <<<"$msg" \
            && usage_error "unknown system '$system' (no entry in configs/systems/)"
        usage_error "cannot load '$config': $(grep -m1 -i error <<<"$msg")"
    fi
else
    system="$("$REFRAME" -C "$config" --show-config systems/0/name 2>/dev/null | tr -d '"' | tail -n1)"
    [[ -n "$system" ]] || usage_error "could not load '$config'"
fi

mkdir -p "$results" || usage_error "cannot create results directory '$results'"
results="$(cd "$results" && pwd)"
stamp="$(date -u +%Y%m%dT%H%M%SZ)"
run="$results/runs/$stamp-$system-$tag"
mkdir -p "$run/post" "$results/perflogs"
ln -sfn "runs/$stamp-$system-$tag" "$results/latest"

# ---- 1. the suite ----------------------------------------------------------------------------------------
say "running the $tag suite on $system -> $run"
start=$SECONDS
# cwd = run dir so ReFrame's own log (reframe.log, relative in settings.py) lands beside the report.
(cd "$run" && "$REFRAME" -C "$config" -c "$REPO/reframe_checks" "${sysargs[@]}" -r --tag "$tag" \
    "${names[@]}" --prefix "$run" --perflogdir "$results/perflogs" \
    --report-file "$run/report.json" --report-junit "$run/junit.xml" --nocolor "${extra[@]}") \
    2>&1 | tee "$run/reframe.out"
rf_status=${PIPESTATUS[0]}
say "reframe exit status $rf_status after $((SECONDS - start)) s"

# ---- 2. postprocess (whatever this checkout has) -------------------------------------------------------
# have CMD: the postprocess CLI offers CMD (its registry lists it and CMD --help works).
have() { (cd "$REPO" && "$PYTHON" -m postprocess "$1" --help >/dev/null 2>&1); }
post() {
    local cmd=$1; shift
    if ! have "$cmd"; then
        say "postprocess: no '$cmd' command in this checkout, skipped"
        return 0
    fi
    say "postprocess $cmd $*"
    (cd "$REPO" && "$PYTHON" -m postprocess "$cmd" "$@")
}

regression=0
post_failed=0
post darshan-index "$run" -o "$run/post/darshan" -j 2 || post_failed=1
post detect --perflogs "$results/perflogs" --system "$system" --json "$run/post/detect.json" \
    > "$run/post/detect.txt" 2>&1
detect_status=$?
cat "$run/post/detect.txt"
if ((detect_status > 1)); then
    post_failed=1
    say "postprocess detect failed (status $detect_status)"
elif [[ -e "$run/post/detect.json" ]]; then
    # detect judges the latest night of EVERY key in the history; the verdict of this run is about
    # the checks this run ran (a key not run tonight must not fail it again for an old night).
    "$PYTHON" - "$run/report.json" "$run/post/detect.json" <<'PYEOF'
import json, sys
report, findings = (json.load(open(p)) for p in sys.argv[1:3])
ran = {(c['system'], c['partition'], c['environ'], c['display_name'])
       for r in report['runs'] for c in r['testcases'] if c.get('result') == 'pass'}
latest = {}
for f in findings:
    key = (f['system'], f['partition'], f['environ'], f['check'])
    if key in ran:
        latest[key + (f['params'], f['phase'])] = max(latest.get(key + (f['params'], f['phase']), ''),
                                                       f['night'])
bad = [f for f in findings if f['status'] == 'regression' and
       latest.get((f['system'], f['partition'], f['environ'], f['check'], f['params'], f['phase']))
       == f['night']]
for f in bad:
    print(f"nightly.sh: REGRESSION {f['night']} {f['system']}:{f['partition']} {f['check']} "
          f"{f['phase']}: median {f['median']:.4g} vs {f['history_median']:.4g} MiB/s")
sys.exit(3 if bad else 0)
PYEOF
    case $? in 0) ;; 3) regression=1 ;; *) post_failed=1; say "could not read detect.json" ;; esac
fi
darshan_link=()
[[ -e "$run/post/darshan/index.html" ]] && darshan_link=(--darshan-index "$run/post/darshan/index.html")
post report --perflogs "$results/perflogs" --system "$system" -o "$run/post/report" "${darshan_link[@]}" \
    || post_failed=1

# ---- 3. verdict ------------------------------------------------------------------------------------------
say "results:  $run"
say "perflogs: $results/perflogs"
say "report:   $run/report.json (JUnit: $run/junit.xml)"
[[ -e "$run/post/report/index.html" ]] && say "html:     $run/post/report/index.html"
if ((rf_status != 0)); then
    say "FAILED: reframe reported failures (status $rf_status)"
    exit 1
fi
if ((post_failed)); then
    # Without a working detection step a regression could pass unseen: that is a failure too.
    say "FAILED: a postprocess step failed (see above)"
    exit 1
fi
if ((regression)); then
    say "FAILED: performance regression detected (see $run/post/detect.txt)"
    exit 3
fi
say "OK"
exit 0
