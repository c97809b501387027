#!/usr/bin/env bash
# Stop the Slurm started by ci/slurm/start.sh: every slurmd, slurmctld, slurmdbd, mariadb, munged, and remove
# the namespaced nodes of --nodes N (network namespaces, veths, bridge, /etc/netns/<node>).
# Each daemon is stopped by the pid in its pid file (checked against its name), so nothing else is touched;
# only namespaces and links with this stack's names (common.sh) are removed.
# Exit 0 when none of them is left running, 1 otherwise (naming the survivors).
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=ci/slurm/common.sh
source "$HERE/common.sh"
[[ $EUID -eq 0 ]] || die "must run as root, running as uid $EUID"

if command -v squeue >/dev/null && scontrol ping >/dev/null 2>&1; then
    left="$(squeue -h -o %i 2>/dev/null || true)"
    # shellcheck disable=SC2086
    [[ -z "$left" ]] || { log "cancelling jobs: $(echo $left)"; scancel $left || true; }
fi
for f in $(slurmd_pidfiles); do stop_daemon slurmd "$f"; done
remove_nodes
stop_daemon slurmctld /run/slurm/slurmctld.pid
stop_daemon slurmdbd  /run/slurm/slurmdbd.pid
stop_daemon mariadbd  /run/mysqld/mysqld.pid
stop_daemon munged    /run/munge/munged.pid

survivors=""
for name in slurmd slurmctld slurmdbd mariadbd munged slurmstepd; do
    pids="$(pgrep -x "$name" | tr '\n' ' ')"
    [[ -z "$pids" ]] || survivors+="$name($pids) "
done
left="$(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^$NS_PREFIX[0-9]+$" | tr '\n' ' ' || true)"
ip link show "$BRIDGE" >/dev/null 2>&1 && left+="$BRIDGE "
[[ -z "$left" ]] || survivors+="namespaces/links: $left"
[[ -z "$survivors" ]] || die "still running: $survivors"
log "stopped"
