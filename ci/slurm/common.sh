# Shared by start.sh / stop.sh (sourced, not run). Names of the local test cluster live here only.
CLUSTER=ioregress
NODE=localhost
PARTITION=batch
DB_NAME=slurm_acct_db
# Namespaced nodes (start.sh --nodes N): node i is $NS_PREFIX$i, hostname and netns of the same name, veth
# $VETH_PREFIX$i on bridge $BRIDGE. Addresses: $SUBNET.1 (this host, the controller) and $SUBNET.$((10+i)).
NS_PREFIX=iorn
VETH_PREFIX=iorv
BRIDGE=iorbr0
SUBNET=10.219.19
CL_PARTITION=cluster
NODE_TMP=/var/tmp/ioregress-node    # TmpFS: each namespaced node mounts its own directory here
NODES_FILE=/run/slurm/ioregress-nodes   # how many namespaced nodes start.sh made (stop.sh removes them)

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

# slurmd_pidfiles: every slurmd pid file of this stack (localhost's, and one per namespaced node).
slurmd_pidfiles() { ls /run/slurm/slurmd.pid /run/slurm/slurmd-*.pid 2>/dev/null || true; }

# remove_nodes: stop the namespaced nodes' slurmd, delete their namespaces, veths, bridge and hosts files.
# Only names this script family makes ($NS_PREFIX*, $VETH_PREFIX*, $BRIDGE) are touched.
remove_nodes() {
    local f ns
    for f in /run/slurm/slurmd-"$NS_PREFIX"*.pid; do
        if [[ -e "$f" ]]; then stop_daemon slurmd "$f"; fi
    done
    for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^$NS_PREFIX[0-9]+$" || true); do
        # anything still running inside (a stray slurmstepd) goes with its namespace
        for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null || true; done
        ip netns delete "$ns" 2>/dev/null || true
        rm -rf "/etc/netns/$ns"
    done
    for f in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1 | grep -E "^$VETH_PREFIX[0-9]+$" || true); do
        ip link delete "$f" 2>/dev/null || true
    done
    if ip link show "$BRIDGE" >/dev/null 2>&1; then ip link delete "$BRIDGE"; fi
    rm -f "$NODES_FILE"
}
