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
#                store/system=<s>/year=<y>/<run>.runs.parquet history: every completed night's runs, and
#                                     .../<run>.reps.parquet  their repetitions
#                                                             (docs/CONTRACT.md section 6), written at its end
#                perflogs/<system>/<partition>/<check>.log   ReFrame's perflogs, appended by every run, never rewritten
#                runs/<UTC stamp>-<system>-<tag>/             this run: report.json, junit.xml, reframe.out,
#                                                             reframe.log, output/, stage/ (failures only),
#                                                             post/ (detection, plots, HTML, Darshan index)
#                latest -> runs/<this run>
#                reframe.db                                   ReFrame's results DB (below)
#   --name     ReFrame -n filter (repeatable), to run a subset
#   --note     a site note for this run ("Lustre 2.15.4 upgrade"): in every perflog line's provenance
#              and the ReFrame report (--session-extras); markers on the history plots (docs/why-accept-compare.md)
#   after --   passed to reframe unchanged
#
# Env IOREGRESS_SWEEP_HOURS: age (hours, default 12) beyond which the start-of-run sweep removes run
# directories a killed job left in scratch (reframe_checks/iobench_lib/scratch.py).
#
# Exit status: 0 all checks passed and no regression detected; 1 a check failed (sanity, performance
# reference or ReFrame error) or a postprocess step failed; 3 checks passed but postprocess detected a
# regression; 2 bad usage (one line, nothing created).
# A postprocess step that cannot run (command missing, import error) is a failed step: exit 1, named.
# Where sites look (docs/nightly.md): IOREGRESS_RESULTS_DB (default <results>/reframe.db, 'off': none)
# stores the sessions in ReFrame's results DB; a system file's 'export': {'victoriametrics': URL}
# sends values and findings there; IOREGRESS_NOTIFY (Apprise URLs) gets a message on red nights.
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
# needs_value OPTION [VALUE...]: a value must follow, and an option (--x) is not one.
needs_value() { (($# >= 2)) && [[ "$2" != --* ]] || usage_error "option '$1' needs a value"; }
while (($#)); do
    case "$1" in
        --tag) needs_value "$@"; tag="$2"; shift 2 ;;
        --system) needs_value "$@"; system="$2"; shift 2 ;;
        --results) needs_value "$@"; results="$2"; shift 2 ;;
        --name) needs_value "$@"; names+=(-n "$2"); shift 2 ;;
        --note) needs_value "$@"; export IOREGRESS_NOTE="$2"; shift 2 ;;
        -h|--help) sed -n '2,31p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        --) shift; extra=("$@"); break ;;
        *) usage_error "unknown option '$1'" ;;
    esac
done
[[ "$tag" == quick || "$tag" == nightly ]] || usage_error "unknown tag '$tag' (quick or nightly)"
# One rule for names that become paths, shared with postprocess (postprocess/common/names.py).
valid_name() { (cd "$REPO" && "$PYTHON" -m postprocess.common.names "$1" "$2" 2>&1 >/dev/null); }
if [[ -n "$system" ]] && ! msg="$(valid_name system "$system")"; then usage_error "${msg#error: }"; fi
for ((i = 1; i < ${#names[@]}; i += 2)); do
    "$PYTHON" -c 'import re, sys; re.compile(sys.argv[1])' "${names[i]}" 2>/dev/null \
        || usage_error "bad --name regular expression '${names[i]}'"
done
command -v "$REFRAME" >/dev/null || usage_error "reframe not found: '$REFRAME'"
# The configs and checks import `iobench_lib` and `postprocess` as installed (ci/setup.sh runs
# `pip install -e .`): they must be this checkout's, or the night would run another's code.
msg="$("$PYTHON" "$REPO/ci/installed_here.py" 2>&1)" || usage_error "$msg"
[[ -z "$results" ]] && usage_error "empty results directory ''"
if [[ -e "$results" && ! -d "$results" ]]; then usage_error "results path is not a directory '$results'"; fi

config="${IOREGRESS_CONFIG:-$REPO/configs/settings.py}"   # another checkout's configs/ (tests)
[[ -f "$config" ]] || usage_error "no ReFrame configuration file '$config'"
sysargs=()
if [[ -n "$system" ]]; then
    sysargs=(--system "$system")
    # Ask ReFrame itself: one line naming the system instead of its error, and nothing created.
    if ! msg="$("$REFRAME" -C "$config" "${sysargs[@]}" --show-config systems/0/name 2>&1)"; then
        grep -q 'could not find a configuration entry' <<<"$msg" \
            && usage_error "unknown system '$system' (no entry in configs/systems/)"
        where="$(grep -o 'File "[^"]*/systems/[^"]*\.py"' <<<"$msg" | tail -n1 | cut -d'"' -f2)"
        usage_error "cannot load '$config'${where:+ (system file '$where')}: $(grep -m1 -i error <<<"$msg" | sed 's/\x1b\[[0-9;]*m//g')"
    fi
else
    system="$("$REFRAME" -C "$config" --show-config systems/0/name 2>/dev/null | tr -d '"' | tail -n1)"
    [[ -n "$system" ]] || usage_error "could not load '$config'"
    msg="$(valid_name system "$system")" || usage_error "configuration gives a ${msg#error: }"
fi

# ---- run directory lifecycle (docs/operations.md) -----------------------------------------------------
# INCOMPLETE from the start; COMPLETE (with the exit status) only at the very end, right after the run's
# file of the results store is written (`postprocess store-run`): a night that did not complete never
# enters the history.
env_error() { echo "nightly.sh: error: $*" >&2; exit 1; }
reason() { local m; m="$(LC_ALL=C "$@" 2>&1 >/dev/null)" && return 0; echo "${m##*: }"; return 1; }
# write_probe DIR: why a small file cannot be written there (empty if it can).
write_probe() { reason dd if=/dev/zero of="$1/.write-probe" bs=4096 count=1 status=none; rm -f "$1/.write-probe"; }
msg="$(reason mkdir -p "$results" "$results/runs" "$results/perflogs")" \
    || env_error "cannot create results directory '$results': $msg"
results="$(cd "$results" && pwd)"
stamp="$(date -u +%Y%m%dT%H%M%SZ)"
name="$stamp-$system-$tag"
for n in 2 3 4 5 6 7 8 9; do          # two nightlies started in one second get two directories
    msg="$(reason mkdir "$results/runs/$name")" && break
    [[ -e "$results/runs/$name" ]] || env_error "cannot create run directory '$results/runs/$name': $msg"
    name="$stamp-$system-$tag-$n"
done
run="$results/runs/$name"
[[ -d "$run" && -z "$(ls -A "$run")" ]] || env_error "cannot create a fresh run directory under '$results/runs'"
stage=start
killed=""
child=""
mark() {        # mark FILE TEXT: write a marker atomically
    printf '%s\n' "$2" > "$run/.$1.tmp" 2>/dev/null && mv -f "$run/.$1.tmp" "$run/$1"
}
# A perflog ending in a partial line (a disk that filled mid-line) gets its newline now, so tonight's
# first line is not glued to it; the partial line stays and postprocess reports it as corrupt.
while IFS= read -r -d '' f; do
    if [[ -s "$f" && "$(tail -c1 "$f" | od -An -c | tr -d ' ')" != '\n' ]]; then
        say "perflog '$f' ends in a partial line (earlier full disk or crash): newline appended"
        printf '\n' >> "$f" || env_error "cannot append to perflog '$f'"
    fi
done < <(find "$results/perflogs" -type f \( -name '*.log' -o -name '*.log.h[0-9]*' \) -print0)
mark INCOMPLETE "started $(date -u +%FT%TZ) pid $$; still running, killed or crashed until COMPLETE replaces this" \
    && mkdir -p "$run/post" \
    || env_error "cannot write run directory '$run': $(write_probe "$run")"
for other in "$results"/runs/*/INCOMPLETE; do
    [[ -e "$other" && "$other" != "$run/INCOMPLETE" ]] || continue
    say "note: run $(basename "$(dirname "$other")") did not complete ($(tail -n1 "$other")); it is not in the history"
done
ln -sfn "runs/$name" "$results/latest"
export IOREGRESS_STORE="$results/store"           # the history (postprocess/history/store.py)
export IOREGRESS_THIS_RUN="$run"                  # postprocess counts this run's report though not stored yet
# ReFrame's results DB of this results tree: stock `reframe --list-stored-sessions` reads it
# (docs/nightly.md); postprocess reads the results store.
results_db="${IOREGRESS_RESULTS_DB:-$results/reframe.db}"
if [[ "$results_db" == off ]]; then
    export RFM_ENABLE_RESULTS_STORAGE=n
else
    export RFM_ENABLE_RESULTS_STORAGE=y RFM_SQLITE_DB_FILE="$results_db"
fi

# run_child CMD...: run in its own process group and wait (interruptibly: a trapped signal is acted on
# at once, not after CMD ends); the signal handler stops the whole group.
run_child() { set -m; "$@" & child=$!; set +m; wait "$child"; local st=$?; child=""; return $st; }
on_signal() {   # on_signal NAME NUMBER
    trap '' TERM INT
    killed="SIG$1"
    say "stopped by SIG$1 during $stage: $run stays INCOMPLETE and out of the history"
    if [[ -n "$child" ]]; then
        kill -TERM -- "-$child" 2>/dev/null
        for _ in $(seq 60); do kill -0 "$child" 2>/dev/null || break; sleep 0.5; done
        kill -KILL -- "-$child" 2>/dev/null
    fi
    mark INCOMPLETE "stopped by SIG$1 during $stage at $(date -u +%FT%TZ)"
    exit $((128 + $2))
}
on_exit() {     # the very end: the run into the results store, then COMPLETE (not after a signal)
    local st=$?
    [[ -n "$killed" ]] && return
    if [[ -e "$run/report.json" ]] && ! (cd "$REPO" && "$PYTHON" -m postprocess store-run --run "$run" \
                                        --store "$results/store"); then
        echo "nightly.sh: FAILED: tonight's runs could not be written to the results store '$results/store'" >&2
        st=1
        mark INCOMPLETE "its runs could not be written to the results store at $(date -u +%FT%TZ)"
        exit 1
    fi
    if mark COMPLETE "exit status $st at $(date -u +%FT%TZ)"; then
        rm -f "$run/INCOMPLETE"
    else
        echo "nightly.sh: FAILED: cannot mark '$run' complete: $(write_probe "$run")" >&2
        exit 1
    fi
}
trap 'on_signal TERM 15' TERM
trap 'on_signal INT 2' INT
trap on_exit EXIT

# ---- 0. scratch sweep (docs/site.md "Scratch hygiene") -------------------------------------------
# A job killed at its time limit never reaches postrun: remove run directories carrying the suite's
# marker (.ioregress-run) older than IOREGRESS_SWEEP_HOURS (default 12; 0 = all) from the partitions'
# scratch ($IOREGRESS_SCRATCH too) and from earlier runs' stage trees. Nothing without the marker is touched.
stage=sweep
sweep_hours="${IOREGRESS_SWEEP_HOURS:-12}"
sweep_roots=("$results/runs" ${IOREGRESS_SCRATCH:+"$IOREGRESS_SCRATCH"})
while IFS= read -r d; do [[ -n "$d" ]] && sweep_roots+=("$d"); done < <(
    "$REFRAME" -C "$config" "${sysargs[@]}" --show-config systems/0/partitions 2>/dev/null | "$PYTHON" -c '
import json, sys
text = sys.stdin.read(); i = text.find("[")
for p in (json.JSONDecoder().raw_decode(text[i:])[0] if i >= 0 else []):
    print((p.get("extras") or {}).get("scratch") or "")' 2>/dev/null)
"$PYTHON" "$REPO/reframe_checks/iobench_lib/scratch.py" --older-than-hours "$sweep_hours" "${sweep_roots[@]}" \
    || say "scratch sweep failed (status $?): continuing"

# ---- history from before the results store: imported once (docs/operations.md) ---------------------
if ! compgen -G "$results/store/system=*/year=*/*.parquet" >/dev/null \
        && [[ -n "$(find "$results/perflogs" -type f -name '*.log*' -print -quit 2>/dev/null)" ]]; then
    say "no results store yet: importing the history perflogs into $results/store"
    (cd "$REPO" && "$PYTHON" -m postprocess import --perflogs "$results/perflogs" --store "$results/store") \
        || say "import of the history perflogs failed (status $?): tonight is judged on what the store holds"
fi

# ---- 1. the suite ----------------------------------------------------------------------------------------
say "running the $tag suite on $system -> $run"
start=$SECONDS
# cwd = run dir so ReFrame's own log (reframe.log, relative in settings.py) lands beside the report.
stage=reframe
note_extras=()      # ReFrame splits --session-extras at ',': percent-encode it (and '%') in the note
[[ -n "${IOREGRESS_NOTE:-}" ]] && { n="${IOREGRESS_NOTE//%/%25}"; note_extras=(--session-extras "note=${n//,/%2C}"); }
suite() {
    (cd "$run" && "$REFRAME" -C "$config" -c "$REPO/reframe_checks" "${sysargs[@]}" -r --tag "$tag" \
        "${names[@]}" --prefix "$run" --perflogdir "$results/perflogs" \
        --report-file "$run/report.json" --report-junit "$run/junit.xml" --nocolor "${note_extras[@]}" \
        "${extra[@]}") \
        2>&1 | tee "$run/reframe.out"
    return "${PIPESTATUS[0]}"
}
run_child suite
rf_status=$?
say "reframe exit status $rf_status after $((SECONDS - start)) s"
failed_steps=()     # what failed tonight, named to postprocess notify (--failed-step)
((rf_status)) && failed_steps+=(reframe)
# ReFrame only logs a perflog it could not write (e.g. a full disk) and may still exit 0: fail the night.
if ! mark reframe.status "$rf_status"; then
    say "FAILED: cannot write the run directory '$run': $(write_probe "$run")"
    ((rf_status)) || rf_status=1
    failed_steps+=(perflogs)
elif grep -q -m1 -e 'No space left on device' -e '--- Logging error ---' "$run/reframe.out"; then
    say "FAILED: the history perflogs were not fully written: $(grep -o -m1 'No space left on device\|--- Logging error ---' "$run/reframe.out")"
    ((rf_status)) || rf_status=1
    failed_steps+=(perflogs)
fi
stage=postprocess
# ReFrame only warns when it cannot store the session: say so (the results store still gets the night).
grep -q -m1 'failed to store results in the database' "$run/reframe.out" \
    && say "warning: tonight's session is not in the results DB '$results_db' (see reframe.out)"

# ---- 2. postprocess ----------------------------------------------------------------------------------
# step_failed NAME REASON: a failed step, named to notify (--failed-step) and, with its reason, on the
# page (post/failed-steps.tsv, read by postprocess report) and in the terminal.
step_failed() {
    post_failed=1; failed_steps+=("$1")
    printf '%s\t%s\n' "$1" "$2" >> "$run/post/failed-steps.tsv"
}
# post CMD ARGS...: run a postprocess step. A step that cannot run (its command missing from this
# checkout, or its code failing to import: `CMD --help` fails) fails the night with the reason:
# skipping it would end green a night that judged nothing. Status 4 then.
post() {
    local cmd=$1 why; shift
    if ! why="$(cd "$REPO" && "$PYTHON" -m postprocess "$cmd" --help 2>&1 >/dev/null)"; then
        why="$(grep -v '^\s*$' <<<"$why" | tail -n 1)"
        why="cannot run: ${why:-python -m postprocess $cmd --help failed}"
        say "FAILED: postprocess $cmd $why" >&2
        step_failed "$cmd" "$why"
        return 4
    fi
    say "postprocess $cmd $*"
    (cd "$REPO" && "$PYTHON" -m postprocess "$cmd" "$@")
}

regression=0
post_failed=0
post darshan-index "$run" -o "$run/post/darshan" -j 2
st=$?; ((st == 0 || st == 4)) || step_failed darshan-index "exit status $st"
post detect --store "$results/store" --system "$system" --runs "$results/runs" \
    --json "$run/post/detect.json" \
    > "$run/post/detect.txt" 2>&1
detect_status=$?
cat "$run/post/detect.txt"
if ((detect_status == 4)); then
    :   # cannot run: said and recorded by post
elif ((detect_status > 1)); then
    step_failed detect "exit status $detect_status"
    say "postprocess detect failed (status $detect_status)"
elif [[ -e "$run/post/detect.json" ]]; then
    # Tonight's verdict (postprocess/detect/verdict.py) -> $run/post/verdict.json: the findings about
    # the checks this run ran. The checks behind tonight's far nights are re-run right away, as
    # tonight ran them, into the run directory (never the history: no fake night; later nights
    # read it as that night's data): a far night its re-run reproduces, fio steady, is a step.
    # Killed meanwhile: verdict.json says "confirmation": "pending".
    confirm_repeat="${IOREGRESS_CONFIRM_REPEAT:-10}"      # 0: no confirmation re-run
    [[ "$confirm_repeat" =~ ^[0-9]+$ ]] || { say "bad IOREGRESS_CONFIRM_REPEAT '$confirm_repeat', using 10"; confirm_repeat=10; }
    verdict() { (cd "$REPO" && "$PYTHON" -m postprocess verdict --detect "$run/post/detect.json" \
                 --report "$run/report.json" --json "$run/post/verdict.json" "$@"); }
    rerun_list=()
    ((confirm_repeat > 0)) && rerun_list=(--rerun-list "$run/post/rerun.txt" --rerun-runs "$run/post/rerun.runs"
                                          --confirm-repeat "$confirm_repeat")
    verdict "${rerun_list[@]}" --runs "$results/runs"
    verdict_status=$?
    if ((verdict_status != 2 && confirm_repeat > 0)) && [[ -s "$run/post/rerun.txt" ]]; then
        stage=confirmation
        selectors=()
        while read -r sel; do [[ -n "$sel" ]] && selectors+=(-n "$sel"); done < "$run/post/rerun.txt"
        # whole runs as tonight's (each repetition where it sat tonight), >= confirm_repeat in all
        runs=$(cat "$run/post/rerun.runs" 2>/dev/null); [[ "$runs" =~ ^[1-9][0-9]*$ ]] || runs=1
        say "confirmation: re-running $((${#selectors[@]} / 2)) check(s), $runs run(s) as tonight's -> $run/confirm"
        mkdir -p "$run/confirm/perflogs"
        confirm_suite() {
            # not a night: kept out of the results DB as out of the history perflogs
            (cd "$run/confirm" && RFM_ENABLE_RESULTS_STORAGE=n "$REFRAME" -C "$config" \
                -c "$REPO/reframe_checks" "${sysargs[@]}" -r "${selectors[@]}" --repeat "$runs" \
                --prefix "$run/confirm" \
                --perflogdir "$run/confirm/perflogs" --report-file "$run/confirm/report.json" --nocolor \
                "${extra[@]}") > "$run/confirm/reframe.out" 2>&1
        }
        run_child confirm_suite || say "confirmation re-run: reframe status $? (nights it did not re-run stay as they were)"
        stage=postprocess
        verdict --confirm-perflogs "$run/confirm/perflogs" --store "$results/store" \
            --system "$system" --runs "$results/runs"
        verdict_status=$?
    fi
    case $verdict_status in
        0) ;;
        3) regression=1 ;;
        *) step_failed verdict "exit status $verdict_status"; say "could not judge tonight (verdict status $verdict_status)" ;;
    esac
else    # status 1 is also an environment fault (e.g. a full disk): no findings file, no judgement
    ((detect_status == 4)) || step_failed detect "wrote no findings (exit status $detect_status)"
    say "postprocess detect wrote no findings (status $detect_status)"
fi
darshan_link=()
[[ -e "$run/post/darshan/index.html" ]] && darshan_link=(--darshan-index "$run/post/darshan/index.html")
post report --store "$results/store" --system "$system" -o "$run/post/report" "${darshan_link[@]}"
st=$?; ((st == 0 || st == 4)) || step_failed report "exit status $st"

# ---- 3. verdict ------------------------------------------------------------------------------------------
echo
say "results: $run (report.json, JUnit junit.xml, post/); history: $results/store"
# The verdict for a person: counts, each regression / system-wide change / failure, the page's file:// URL.
(cd "$REPO" && "$PYTHON" -m postprocess summary --run "$run") \
    || say "the summary could not judge this run (status $?; see above); html: $run/post/report/index.html"
status=0
((regression)) && status=3
((rf_status != 0 || post_failed)) && status=1
# Tell where sites look (each off unless configured; never changes the night's status): findings to
# VictoriaMetrics, a message to IOREGRESS_NOTIFY on a red night and once when green again.
post export-findings --run "$run" --system "$system" --config "$config" \
    || say "export-findings failed (status $?): the night's status is unchanged"
# A failed night's message names what failed: the checks (report.json) and these steps.
step_args=()
((status == 1)) && for s in "${failed_steps[@]}"; do step_args+=(--failed-step "$s"); done
[[ -n "${IOREGRESS_NOTIFY:-}" ]] && { post notify --run "$run" --system "$system" --status "$status" "${step_args[@]}" \
    || say "notify failed (status $?): the night's status is unchanged"; }
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
