#!/usr/bin/env bash
# Start a one-node Slurm on this machine (loopback only) with real accounting, for CI and tests.
#
#   ci/slurm/start.sh        # installs what is missing (apt), writes configs, starts daemons, waits for idle
#   ci/slurm/stop.sh         # stops every daemon this stack uses
#
# Stack: munged -> mariadb -> slurmdbd -> slurmctld -> slurmd (node `localhost`, NodeAddr 127.0.0.1, so the
# machine's hostname does not matter for the node). Accounting is real (slurmdbd + MariaDB) because ReFrame's
# `slurm` scheduler polls `sacct` for job states and exit codes. No cgroups (proctrack/linuxproc, task/none):
# containers and CI VMs rarely delegate them. Needs root; Debian/Ubuntu with apt.
#
# Exit status: 0 ready; 1 a step failed or the node is not idle in time (message names it); 2 bad setting.
# Environment: IOREGRESS_SLURM_TIMEOUT (s, default 60) to wait for the node to become idle;
#              IOREGRESS_SLURM_FORCE=1 to replace an /etc/slurm/slurm.conf this script did not write;
#              IOREGRESS_SLURM_MAXTIME (minutes, default 240: nightly checks ask for 2 h) partition MaxTime.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=ci/slurm/common.sh
source "$HERE/common.sh"

TIMEOUT="${IOREGRESS_SLURM_TIMEOUT:-60}"
MAXTIME="${IOREGRESS_SLURM_MAXTIME:-240}"
[[ "$TIMEOUT" =~ ^[1-9][0-9]*$ ]] || bad "IOREGRESS_SLURM_TIMEOUT must be a positive integer, got '$TIMEOUT'"
[[ "$MAXTIME" =~ ^[1-9][0-9]*$ ]] || bad "IOREGRESS_SLURM_MAXTIME must be a positive integer, got '$MAXTIME'"
[[ $EUID -eq 0 ]] || die "must run as root (starts system daemons), running as uid $EUID"

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
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
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
sed -e "s/@CLUSTER@/$CLUSTER/g" -e "s/@CTLHOST@/$(hostname -s)/g" -e "s/@CPUS@/$CPUS/g" \
    -e "s/@MEM@/$MEM/g" -e "s/@MAXTIME@/$MAXTIME/g" -e "s/@NODE@/$NODE/g" -e "s/@PARTITION@/$PARTITION/g" \
    "$HERE/slurm.conf.in" > /etc/slurm/slurm.conf.tmp

# Already up with this very config: leave running jobs alone (tests call start.sh as a fixture).
if cmp -s /etc/slurm/slurm.conf.tmp /etc/slurm/slurm.conf && running slurmdbd /run/slurm/slurmdbd.pid \
        && running slurmctld /run/slurm/slurmctld.pid && running slurmd /run/slurm/slurmd.pid \
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
    stop_daemon slurmd    /run/slurm/slurmd.pid
    stop_daemon slurmctld /run/slurm/slurmctld.pid
    stop_daemon slurmdbd  /run/slurm/slurmdbd.pid
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
while :; do
    state="$(sinfo -h -n "$NODE" -o %T 2>/dev/null || true)"
    case "$state" in
        idle) break ;;
        alloc*|mix*|comp*) ((fresh)) || break ;;
        down*|drain*|fail*) scontrol update nodename="$NODE" state=resume 2>/dev/null || true ;;
    esac
    ((SECONDS < deadline)) || die "node '$NODE' not idle after ${TIMEOUT}s (state '${state:-none}'); see /var/log/slurm/"
    sleep 1
done
log "ready: cluster $CLUSTER, partition $PARTITION, node $NODE ($CPUS CPUs, ${MEM} MB), MaxTime ${MAXTIME} min"
