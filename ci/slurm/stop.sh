#!/usr/bin/env bash
# Stop the one-node Slurm started by ci/slurm/start.sh: slurmd, slurmctld, slurmdbd, mariadb, munged.
# Each daemon is stopped by the pid in its pid file (checked against its name), so nothing else is touched.
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
stop_daemon slurmd    /run/slurm/slurmd.pid
stop_daemon slurmctld /run/slurm/slurmctld.pid
stop_daemon slurmdbd  /run/slurm/slurmdbd.pid
stop_daemon mariadbd  /run/mysqld/mysqld.pid
stop_daemon munged    /run/munge/munged.pid

survivors=""
for name in slurmd slurmctld slurmdbd mariadbd munged slurmstepd; do
    pids="$(pgrep -x "$name" | tr '\n' ' ')"
    [[ -z "$pids" ]] || survivors+="$name($pids) "
done
[[ -z "$survivors" ]] || die "still running: $survivors"
log "stopped"
