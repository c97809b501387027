#!/usr/bin/env bash
# Gate a change of the I/O stack in one command: run the chosen checks under stack A and stack B
# side by side (A B B A ...), judge B on its pairs, and with --bisect name the part that did it.
#
#   ci/gate.sh --a ENV --b ENV [--system NAME] [--name REGEX]... [--tag TAG]...
#              [--pairs N|auto] [--effect 15%] [--plan] [--tolerance F] [--bisect]
#              [--results DIR] [-- REFRAME_ARGS...]
#
#   --a, --b    ReFrame environments of the site's configuration: A the trusted stack, B the new
#               one (on `local`: mpi-gnu, mpi-gnu-ompio, mpi-gnu-romio, mpi-gnu-next, ...)
#   --results   where the gate's run goes (default <repo>/results/gates/<UTC time>-<A>-vs-<B>):
#               gate.json, index.html (the page), slots/ (one ReFrame run each)
#   --plan      say how many pairs each check needs to tell --effect and about how long, and stop
#               (a short pilot when no earlier gate or nightly knows the checks' spread)
#   --pairs auto  run pairs until every check is decided (confidence sequence) or the plan's cap
#   other options go to `python -m gate` (docs/gate.md), after -- to every ReFrame run
#
# Exit status: 0 every check and phase the same or faster; 3 slower; 4 cannot tell (too few
# pairs, too much spread, a check not run on one side); 1 a check failed or a run could not be
# made; 2 bad usage (one line). Never 0 when something could not be judged.
set -uo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-python3}"

usage_error() { echo "gate.sh: error: $*" >&2; exit 2; }
a="" b="" out="" args=() reframe_args=()
while (($#)); do
    case "$1" in
        --a|--b|--results)
            (($# >= 2)) && [[ "$2" != --* ]] || usage_error "option '$1' needs a value"
            case "$1" in
                --a) a="$2"; args+=(--a "$2") ;;
                --b) b="$2"; args+=(--b "$2") ;;
                --results) out="$2" ;;
            esac
            shift 2 ;;
        -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        --) reframe_args=("$@"); break ;;
        *) args+=("$1"); shift ;;
    esac
done
[[ -n "$a" && -n "$b" ]] || usage_error "--a ENV and --b ENV are required"
# the checks and ReFrame's configuration import iobench_lib: it must be this checkout's
msg="$("$PYTHON" "$REPO/ci/installed_here.py" 2>&1)" || usage_error "$msg"
out="${out:-$REPO/results/gates/$(date -u +%Y%m%dT%H%M%SZ)-$a-vs-$b}"
cd "$REPO" && exec "$PYTHON" -m gate "${args[@]}" --out "$out" "${reframe_args[@]}"
