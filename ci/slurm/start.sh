#!/usr/bin/env bash
# Start a Slurm on this machine with real accounting, for CI and tests: one node on loopback, and with
# --nodes N also N "nodes" each in its own network and UTS namespace (own hostname, own address on a bridge
# this script makes), so that jobs really span nodes and MPI ranks on different nodes talk over TCP.
#
#   ci/slurm/start.sh            # node localhost (127.0.0.1), partition batch
#   ci/slurm/start.sh --nodes 4  # the same plus nodes iorn1..iorn4 (10.219.19.11..14), partition cluster
#   ci/slurm/stop.sh             # stops every daemon, removes every namespace, veth and bridge this stack made
#
# Namespaced nodes share this machine's kernel, file systems and page cache: a read "from another node" is
# not a cold read here (iobench drops the page cache as well, docs/CONTRACT.md §2). Traffic between them stays
# on the bridge $BRIDGE ($SUBNET.0/24, common.sh): only addresses this script made. The controller listens on
# $SUBNET.1 then (slurmd in a namespace cannot reach the host's loopback).
#
# Stack: munged -> mariadb -> slurmdbd -> slurmctld -> slurmd (node `localhost`, NodeAddr 127.0.0.1, so the
# machine's hostname does not matter for the node). Accounting is real (slurmdbd + MariaDB) because ReFrame's
# `slurm` scheduler polls `sacct` for job states and exit codes. No cgroups (proctrack/linuxproc, task/none):
# containers and CI VMs rarely delegate them. Needs root; Debian/Ubuntu with apt.
#
# Exit status: 0 ready; 1 a step failed or the node is not idle in time (message names it); 2 bad setting.
# Environment: IOREGRESS_SLURM_TIMEOUT (s, default 60) to wait for the node to become idle;
#              IOREGRESS_SLURM_FORCE=1 to replace an /etc/slurm/slurm.conf this script did not write;
#              IOREGRESS_SLURM_MAXTIME (minutes, default 240: nightly checks ask for 2 h) partition MaxTime;
#              IOREGRESS_SLURM_NODE_CPUS (default 4) CPUs each namespaced node declares (they share this
#              machine's cores: tests place uneven layouts such as 4+3 on them, not bandwidth).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=ci/slurm/common.sh
source "$HERE/common.sh"

NNODES=0
while (($#)); do
    case "$1" in
        --nodes) NNODES="${2-}"; shift $(($# > 1 ? 2 : 1)) ;;
        --nodes=*) NNODES="${1#--nodes=}"; shift ;;
        *) bad "unknown argument '$1' (usage: start.sh [--nodes N])" ;;
    esac
done
[[ "$NNODES" =~ ^([0-9]|1[0-6])$ ]] || bad "--nodes must be 0..16, got '$NNODES'"
NODE_CPUS="${IOREGRESS_SLURM_NODE_CPUS:-4}"
[[ "$NODE_CPUS" =~ ^[1-9][0-9]*$ ]] || bad "IOREGRESS_SLURM_NODE_CPUS must be a positive integer, got '$NODE_CPUS'"

TIMEOUT="${IOREGRESS_SLURM_TIMEOUT:-60}"
MAXTIME="${IOREGRESS_SLURM_MAXTIME:-240}"
[[ "$TIMEOUT" =~ ^[1-9][0-9]*$ ]] || bad "IOREGRESS_SLURM_TIMEOUT must be a positive integer, got '$TIMEOUT'"
[[ "$MAXTIME" =~ ^[1-9][0-9]*$ ]] || bad "IOREGRESS_SLURM_MAXTIME must be a positive integer, got '$MAXTIME'"
[[ $EUID -eq 0 ]] || die "must run as root (starts system daemons), running as uid $EUID"
# The daemons started below inherit this script's descriptors: a caller's lock (`flock LOCK start.sh`,
# as the tests and docs do) would stay held by munged, mariadb and slurm* for as long as they run,
# and every later `flock LOCK` would wait for ever. Keep stdin/out/err only (255: bash reads us).
for fd in $(ls /proc/$$/fd); do
    case "$fd" in 0|1|2|255) ;; *) eval "exec $fd>&-" 2>/dev/null || true ;; esac
done

# --- 1. packages (idempotent: apt only when a daemon binary is missing) -----------------------------------
need=()
command -v munged    >/dev/null || need+=(munge)
command -v slurmctld >/dev/null || need+=(slurmctld slurm-client)
command -v slurmd    >/dev/null || need+=(slurmd)
command -v slurmdbd  >/dev/null || need+=(slurmdbd)
command -v mariadbd  >/dev/null || need+=(mariadb-server)
if ((${#need[@]})); then
    log "installing: ${need[*]}"
    export DEBIAN_FRONTEND=noninteractive
    # one apt at a time on a shared machine (flock), if flock exists
    lock=(); command -v flock >/dev/null && lock=(flock /tmp/ioregress-apt.lock)
    "${lock[@]}" apt-get update -qq
    "${lock[@]}" apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

# --- 2. munge ---------------------------------------------------------------------------------------------
if [[ ! -s /etc/munge/munge.key ]]; then
    log "creating /etc/munge/munge.key"
    mungekey --create --keyfile=/etc/munge/munge.key
fi
chown munge:munge /etc/munge/munge.key && chmod 400 /etc/munge/munge.key
install -d -o munge -g munge -m 755 /run/munge
install -d -o munge -g munge -m 700 /var/lib/munge /var/log/munge
if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
    log "starting munged"
    runuser -u munge -- /usr/sbin/munged
    wait_for 10 "munged answers" sh -c 'munge -n | unmunge >/dev/null 2>&1'
fi

install -d -m 755 /etc/slurm /var/log/slurm /var/spool/slurmctld /var/spool/slurmd /run/slurm

# --- 3. MariaDB (socket + 127.0.0.1 only) and the accounting database user -------------------------------
install -d -o mysql -g mysql -m 755 /run/mysqld /var/log/mysql
if ! mysqladmin --connect-timeout=2 ping >/dev/null 2>&1; then
    log "starting mariadb"
    [[ -d /var/lib/mysql/mysql ]] || mariadb-install-db --user=mysql >/dev/null
    runuser -u mysql -- mariadbd --bind-address=127.0.0.1 --pid-file=/run/mysqld/mysqld.pid \
        --socket=/run/mysqld/mysqld.sock --log-error=/var/log/mysql/error.log >/dev/null 2>&1 &
    disown
    wait_for 30 "mariadb answers" mysqladmin --connect-timeout=2 ping
fi

# --- 4. slurm.conf (rendered every start from the template; follows the machine's CPUs and memory) --------
# Never overwrite a slurm.conf that this script did not write (a real cluster's, say).
if [[ -s /etc/slurm/slurm.conf ]] && ! head -n1 /etc/slurm/slurm.conf | grep -q 'ci/slurm/start.sh' \
        && [[ "${IOREGRESS_SLURM_FORCE:-0}" != 1 ]]; then
    die "/etc/slurm/slurm.conf exists and was not written by ci/slurm/start.sh; set IOREGRESS_SLURM_FORCE=1 to replace it"
fi
read -r CPUS MEM < <(slurmd -C | awk '/^NodeName/ {for (i=1;i<=NF;i++) {split($i,kv,"=");
    if (kv[1]=="CPUs") c=kv[2]; if (kv[1]=="RealMemory") m=kv[2]}; print c, m}')
[[ -n "$CPUS" && -n "$MEM" ]] || die "could not read CPUs/RealMemory from 'slurmd -C'"
# Leave some memory to the OS so the node never drains on a memory mismatch.
MEM=$((MEM * 9 / 10))
CTLADDR=127.0.0.1 PERNODE=""
((NNODES == 0)) || CTLADDR="$SUBNET.1" PERNODE="-%n"
nsnodes="" nspart=""
if ((NNODES)); then
    # they share this machine's cores: declare NODE_CPUS each and let slurmd accept that
    nsnodes="SlurmdParameters=config_overrides"
    # PMIx's per-step directory is <TmpFS>/spmix_appdir_<uid>_<job>.<step>, the same name on every node:
    # each node mounts its own directory here (below), as real nodes have their own /tmp.
    nsnodes+=$'\n'"TmpFS=$NODE_TMP"
    for i in $(seq 1 "$NNODES"); do
        nsnodes+=$'\n'"NodeName=$NS_PREFIX$i NodeAddr=$SUBNET.$((10 + i)) CPUs=$NODE_CPUS RealMemory=$MEM State=UNKNOWN"
    done
    nspart="PartitionName=$CL_PARTITION Nodes=$NS_PREFIX[1-$NNODES] MaxTime=$MAXTIME DefaultTime=10 State=UP"
fi
{
    sed -e "s/@CLUSTER@/$CLUSTER/g" -e "s/@CTLHOST@/$(hostname -s)/g" -e "s/@CPUS@/$CPUS/g" \
        -e "s/@MEM@/$MEM/g" -e "s/@MAXTIME@/$MAXTIME/g" -e "s/@NODE@/$NODE/g" -e "s/@PARTITION@/$PARTITION/g" \
        -e "s/@CTLADDR@/$CTLADDR/g" -e "s/@PERNODE@/$PERNODE/g" "$HERE/slurm.conf.in" |
        NSNODES="$nsnodes" NSPART="$nspart" awk '$0 == "@NSNODES@" {if (ENVIRON["NSNODES"] != "") print ENVIRON["NSNODES"]; next}
            $0 == "@NSPARTITION@" {if (ENVIRON["NSPART"] != "") print ENVIRON["NSPART"]; next} {print}'
} > /etc/slurm/slurm.conf.tmp
ALL_NODES=("$NODE")
for i in $(seq 1 "$NNODES"); do ALL_NODES+=("$NS_PREFIX$i"); done
pidfile_of() { if ((NNODES)); then echo "/run/slurm/slurmd-$1.pid"; else echo /run/slurm/slurmd.pid; fi; }
all_slurmd_running() {
    local n
    for n in "${ALL_NODES[@]}"; do running slurmd "$(pidfile_of "$n")" || return 1; done
}

# make_nodes: bridge $BRIDGE ($SUBNET.1/24), and per node a network namespace with a veth on the bridge, its
# address, loopback, and /etc/netns/<node>/hosts (its slurmd sees it as /etc/hosts) naming every node.
make_nodes() {
    install -d -m 1777 "$NODE_TMP"
    ip link add "$BRIDGE" type bridge
    ip addr add "$SUBNET.1/24" dev "$BRIDGE"
    ip link set "$BRIDGE" up
    local hosts="127.0.0.1 localhost"$'\n'"$SUBNET.1 $(hostname -s)"$'\n' i ns
    for i in $(seq 1 "$NNODES"); do hosts+="$SUBNET.$((10 + i)) $NS_PREFIX$i"$'\n'; done
    for i in $(seq 1 "$NNODES"); do
        ns="$NS_PREFIX$i"
        ip netns add "$ns"
        ip link add "$VETH_PREFIX$i" type veth peer name eth0 netns "$ns"
        ip link set "$VETH_PREFIX$i" master "$BRIDGE" up
        ip -n "$ns" addr add "$SUBNET.$((10 + i))/24" dev eth0
        ip -n "$ns" link set eth0 up
        ip -n "$ns" link set lo up
        install -d "/etc/netns/$ns" "/var/spool/slurmd-$ns/tmp"
        printf '%s' "$hosts" > "/etc/netns/$ns/hosts"
    done
    echo "$NNODES" > "$NODES_FILE"
}

# Already up with this very config: leave running jobs alone (tests call start.sh as a fixture).
if cmp -s /etc/slurm/slurm.conf.tmp /etc/slurm/slurm.conf && running slurmdbd /run/slurm/slurmdbd.pid \
        && running slurmctld /run/slurm/slurmctld.pid && all_slurmd_running \
        && scontrol ping >/dev/null 2>&1; then
    rm -f /etc/slurm/slurm.conf.tmp
    fresh=0
    log "already running with the current config"
else
    fresh=1
    mv /etc/slurm/slurm.conf.tmp /etc/slurm/slurm.conf
    # A fresh DB password each (re)start: it lives only in slurmdbd.conf (mode 600), nothing to remember.
    DBPASS="$(head -c 24 /dev/urandom | base64 | tr -dc 'A-Za-z0-9')"
    mysql -u root <<SQL
CREATE USER IF NOT EXISTS 'slurm'@'localhost';
ALTER USER 'slurm'@'localhost' IDENTIFIED BY '$DBPASS';
GRANT ALL ON ${DB_NAME}.* TO 'slurm'@'localhost';
SQL
    (umask 077; sed -e "s/@DBPASS@/$DBPASS/g" -e "s/@DBNAME@/$DB_NAME/g" "$HERE/slurmdbd.conf.in" \
        > /etc/slurm/slurmdbd.conf.tmp)
    mv /etc/slurm/slurmdbd.conf.tmp /etc/slurm/slurmdbd.conf

    # --- 5. slurmdbd -> slurmctld -> slurmd (restarted so new configs and password take effect) ---------
    for f in $(slurmd_pidfiles); do stop_daemon slurmd "$f"; done
    remove_nodes
    stop_daemon slurmctld /run/slurm/slurmctld.pid
    stop_daemon slurmdbd  /run/slurm/slurmdbd.pid
    # the bridge first: slurmctld listens on and talks to its addresses (none may be routed elsewhere)
    ((NNODES == 0)) || make_nodes
    log "starting slurmdbd"
    slurmdbd
    wait_for 30 "slurmdbd answers" sacctmgr -n -i show cluster
    sacctmgr -n -P show cluster format=cluster | grep -qx "$CLUSTER" \
        || sacctmgr -i add cluster "$CLUSTER" >/dev/null
    log "starting slurmctld"
    slurmctld
    wait_for 30 "slurmctld answers" scontrol ping
    log "starting slurmd (node $NODE)"
    slurmd -N "$NODE"
    if ((NNODES)); then
        for i in $(seq 1 "$NNODES"); do
            log "starting slurmd (node $NS_PREFIX$i, $SUBNET.$((10 + i)), own network and UTS namespace)"
            # nsenter, not `ip netns exec`: that remounts /sys, hiding the cgroup mounts slurmd wants. Own
            # UTS (hostname) and mount namespace (its /etc/hosts names every node; nothing leaks out).
            nsenter --net="/run/netns/$NS_PREFIX$i" unshare --uts --mount --propagation private sh -c \
                "mount --bind /etc/netns/$NS_PREFIX$i/hosts /etc/hosts && mount --bind /var/spool/slurmd-$NS_PREFIX$i/tmp $NODE_TMP \
                 && hostname $NS_PREFIX$i && exec slurmd -N $NS_PREFIX$i" \
                || die "slurmd of node $NS_PREFIX$i did not start; see /var/log/slurm/slurmd-$NS_PREFIX$i.log"
        done
    fi
fi

# --- 6. clean state after a (re)start: no leftover jobs, node back in service, wait for idle --------------
left=""
((fresh)) && left="$(squeue -h -o %i || true)"
if [[ -n "$left" ]]; then
    log "cancelling leftover jobs: $(echo $left)"
    # shellcheck disable=SC2086
    scancel $left || true
fi
deadline=$((SECONDS + TIMEOUT))
for node in "${ALL_NODES[@]}"; do
    while :; do
        state="$(sinfo -h -n "$node" -o %T 2>/dev/null || true)"
        case "$state" in
            idle) break ;;
            alloc*|mix*|comp*) ((fresh)) || break ;;
            down*|drain*|fail*) scontrol update nodename="$node" state=resume 2>/dev/null || true ;;
        esac
        ((SECONDS < deadline)) || die "node '$node' not idle after ${TIMEOUT}s (state '${state:-none}'); see /var/log/slurm/"
        sleep 1
    done
done
log "ready: cluster $CLUSTER, partition $PARTITION, node $NODE ($CPUS CPUs, ${MEM} MB), MaxTime ${MAXTIME} min"
((NNODES == 0)) || log "ready: partition $CL_PARTITION, nodes $NS_PREFIX[1-$NNODES] ($NODE_CPUS CPUs each) on bridge $BRIDGE ($SUBNET.0/24)"
