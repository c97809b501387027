#!/usr/bin/env bash
# Carry a results tree's history between CI jobs on a git branch (ci/gitlab-ci.yml, branch mode).
#
#   ci/history.sh restore RESULTS            the branch's history into RESULTS (nothing on the first night)
#   ci/history.sh save RESULTS MESSAGE       RESULTS' history onto the branch, committed and pushed
#
# The history is everything a verdict reads besides tonight's run (docs/nightly.md "CI"):
#   store/                 the results store (every completed night)
#   accepted.jsonl         acceptances (postprocess accept)
#   notify/                what the last message said (postprocess notify)
#   perflogs/              ReFrame's perflogs (the source the store was first imported from)
#   runs/*/{COMPLETE,INCOMPLETE,reframe.status}  each run's end marker
#   runs/*/confirm/{perflogs/,report.json}       confirmation re-runs: data of their nights
# Not carried: each run's outputs, stage, page and Darshan logs (the job's artifacts) and
# ReFrame's results DB (a binary file rewritten nightly; a site that wants it uses a site path).
#
# Env: IOREGRESS_RESULTS_BRANCH (required); IOREGRESS_PUSH_URL (a full URL), else
# https://ci:$IOREGRESS_PUSH_TOKEN@$CI_SERVER_HOST/$CI_PROJECT_PATH.git, else the checkout's origin.
# Exit: 0 done; 1 git failed (nothing half-written in RESULTS: restore unpacks a complete clone);
# 2 bad usage.
set -uo pipefail

usage_error() { echo "history.sh: error: $*" >&2; exit 2; }
fail() { echo "history.sh: FAILED: $*" >&2; exit 1; }

(($# >= 2)) || usage_error "usage: ci/history.sh restore|save RESULTS [MESSAGE]"
action=$1 results=$2 message=${3:-history}
[[ "$action" == restore || "$action" == save ]] || usage_error "unknown action '$action' (restore or save)"
branch=${IOREGRESS_RESULTS_BRANCH:-}
[[ -n "$branch" ]] || usage_error "IOREGRESS_RESULTS_BRANCH is not set"
git check-ref-format --branch "$branch" >/dev/null 2>&1 || usage_error "bad branch name '$branch'"
if [[ -n "${IOREGRESS_PUSH_URL:-}" ]]; then url=$IOREGRESS_PUSH_URL
elif [[ -n "${IOREGRESS_PUSH_TOKEN:-}" ]]; then url="https://ci:${IOREGRESS_PUSH_TOKEN}@${CI_SERVER_HOST}/${CI_PROJECT_PATH}.git"
else url=$(git remote get-url origin 2>/dev/null) || usage_error "no IOREGRESS_PUSH_URL, token or origin"
fi

work=$(mktemp -d) || fail "cannot make a temporary directory"
trap 'rm -rf "$work"' EXIT
# clone_branch: the branch's tip into $work/tree; status 3 when the branch does not exist yet
clone_branch() {
    if git ls-remote --exit-code --heads "$url" "$branch" >/dev/null 2>&1; then
        git clone -q --depth 1 --branch "$branch" "$url" "$work/tree" || fail "cannot clone branch '$branch'"
        return 0
    fi
    git ls-remote "$url" >/dev/null 2>&1 || fail "cannot reach the repository of branch '$branch'"
    return 3
}

if [[ "$action" == restore ]]; then
    mkdir -p "$results" || fail "cannot create '$results'"
    clone_branch || { echo "history.sh: no branch '$branch' yet: the first night starts the history"; exit 0; }
    rm -rf "$work/tree/.git"
    cp -a "$work/tree/." "$results/" || fail "cannot copy the history into '$results'"
    echo "history.sh: restored $(find "$results/store" -name '*.parquet' ! -name '*.reps.parquet' 2>/dev/null | wc -l) night file(s) of the store from '$branch'"
    exit 0
fi

[[ -d "$results" ]] || usage_error "no results tree '$results'"
if ! clone_branch; then
    git init -q "$work/tree" && git -C "$work/tree" checkout -q --orphan "$branch" || fail "cannot start branch '$branch'"
fi
tree=$work/tree
find "$tree" -mindepth 1 -maxdepth 1 ! -name .git -exec rm -rf {} +
(
    cd "$results" || exit 1
    for f in store accepted.jsonl notify perflogs; do [[ -e "$f" ]] && printf '%s\0' "$f"; done
    find runs -mindepth 2 -maxdepth 2 \( -name COMPLETE -o -name INCOMPLETE -o -name reframe.status \) -print0 2>/dev/null
    find runs -mindepth 3 -maxdepth 3 -path '*/confirm/*' \( -name perflogs -o -name report.json \) -print0 2>/dev/null
) | (cd "$results" && xargs -0 -r cp -a --parents -t "$tree") || fail "cannot copy the history of '$results'"
git -C "$tree" add -A . || fail "git add failed"
if git -C "$tree" diff --cached --quiet 2>/dev/null && git -C "$tree" rev-parse -q --verify HEAD >/dev/null; then
    echo "history.sh: nothing new to save on '$branch'"
    exit 0
fi
git -C "$tree" -c user.name="ioregress CI" -c user.email="ioregress@${CI_SERVER_HOST:-localhost}" \
    commit -q -m "$message" || fail "git commit failed"
git -C "$tree" push -q "$url" "HEAD:refs/heads/$branch" || fail "cannot push branch '$branch'"
echo "history.sh: saved the history of '$results' on '$branch'"
