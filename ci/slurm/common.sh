# Shared by start.sh / stop.sh (sourced, not run). Names of the local test cluster live here only.
CLUSTER=ioregress
NODE=localhost
PARTITION=batch
DB_NAME=slurm_acct_db

log() { echo "slurm: $*"; }
die() { echo "slurm: error: $*" >&2; exit 1; }
bad() { echo "slurm: error: $*" >&2; exit 2; }   # bad input

# wait_for SECONDS WHAT CMD...: retry CMD every 0.5 s until it succeeds, or die naming WHAT.
wait_for() {
    local secs=$1 what=$2; shift 2
    local deadline=$((SECONDS + secs))
    until "$@" >/dev/null 2>&1; do
        ((SECONDS < deadline)) || die "timed out after ${secs}s waiting until $what"
        sleep 0.5
    done
}

# stop_daemon NAME PIDFILE: TERM the pid in PIDFILE (only if it really is NAME), wait, then KILL.
stop_daemon() {
    local name=$1 pidfile=$2 pid
    [[ -s "$pidfile" ]] || return 0
    pid="$(cat "$pidfile")"
    if [[ "$pid" =~ ^[0-9]+$ ]] && [[ "$(cat /proc/"$pid"/comm 2>/dev/null)" == "$name" ]]; then
        log "stopping $name (pid $pid)"
        kill -TERM "$pid" 2>/dev/null || true
        for _ in $(seq 1 40); do
            [[ -d /proc/$pid ]] || break
            sleep 0.5
        done
        if [[ -d /proc/$pid ]]; then
            log "$name (pid $pid) ignored TERM for 20 s, killing"
            kill -KILL "$pid" 2>/dev/null || true
        fi
    fi
    rm -f "$pidfile"
}

# running NAME PIDFILE: true when the pid in PIDFILE is alive and is NAME.
running() {
    local pid
    [[ -s "$2" ]] || return 1
    pid="$(cat "$2")"
    [[ "$pid" =~ ^[0-9]+$ && "$(cat /proc/"$pid"/comm 2>/dev/null)" == "$1" ]]
}
