#!/usr/bin/env bash
# tare's CI gate: one script that a GitHub Actions job and a GitLab CI job both call on the
# commit under test (examples/ci/github-actions.yml, examples/ci/gitlab-ci.yml; docs/store.md
# "CI gate"). It
#   1. runs the benchmarks (`-- TARE-RUN-ARGS…`: `tare run --export-json` with them) and/or
#      takes results files (`--results FILE|DIR`, repeatable);
#   2. adds them to the history at the commit under test (`tare history add --commit SHA`):
#      the store of TARE_STORE (an SQLite file, kept between jobs by the CI's cache, or a
#      postgresql:// URL), or a `tare serve` server (TARE_SERVER, token in TARE_TOKEN);
#   3. judges that commit against the baseline branch's history up to their merge base
#      (`tare history check --commit SHA --baseline-branch BRANCH`);
#   4. writes the pull-request comment as Markdown to TARE_GATE_SUMMARY (default
#      tare-summary.md), and appends it to $GITHUB_STEP_SUMMARY when that is set;
#   5. exits with the gate's code: 0 passed (or not judged yet, said in the summary), 1 a
#      regression at this commit, 2 a usage or input error, 3 the benchmarks failed.
#
# What it reads from the runner's environment (each can be given with TARE_GATE_* instead):
#   commit     TARE_GATE_COMMIT, else GITHUB_SHA, else CI_COMMIT_SHA, else HEAD
#   baseline   TARE_GATE_BASELINE, else GITHUB_BASE_REF (a pull request's target), else
#              CI_MERGE_REQUEST_TARGET_BRANCH_NAME, else CI_DEFAULT_BRANCH, else tare's
#              default (origin/HEAD, else main)
#   branch     TARE_GATE_BRANCH, else GITHUB_HEAD_REF, else GITHUB_REF_NAME, else
#              CI_MERGE_REQUEST_SOURCE_BRANCH_NAME, else CI_COMMIT_REF_NAME (recorded only)
#   tare       TARE (default: tare in PATH); TARE_GATE_CHECK_ARGS: more `history check`
#              options (e.g. "--metric all"), split on spaces
#   webhook    TARE_GATE_WEBHOOK: an http:// URL each new alert is POSTed to as JSON, linking
#              the job's page (GITHUB_SERVER_URL/GITHUB_REPOSITORY/actions/runs/GITHUB_RUN_ID,
#              or CI_JOB_URL)
set -u

usage() {
    sed -n '2,/^$/s/^# \{0,1\}//p' "$0"
    echo "usage: ci-gate.sh [--results FILE|DIR]... [-- TARE-RUN-ARGS...]"
}

say() { echo "ci-gate: $*" >&2; }

tare=${TARE:-tare}
results=()
run_args=()
while [ $# -gt 0 ]; do
    case $1 in
        --results)
            [ $# -ge 2 ] || { say "--results needs a file or directory"; exit 2; }
            results+=("$2")
            shift 2
            ;;
        --results=*)
            results+=("${1#--results=}")
            shift
            ;;
        --)
            shift
            run_args=("$@")
            break
            ;;
        -h | --help)
            usage
            exit 0
            ;;
        *)
            say "unknown argument '$1': give --results FILE|DIR and/or -- TARE-RUN-ARGS (see --help)"
            exit 2
            ;;
    esac
done
if [ ${#results[@]} -eq 0 ] && [ ${#run_args[@]} -eq 0 ]; then
    say "nothing to judge: give --results FILE|DIR (from tare run --export-json) or -- TARE-RUN-ARGS to run the benchmarks"
    exit 2
fi

first() { for v in "$@"; do if [ -n "$v" ]; then echo "$v"; return; fi; done; }
commit=$(first "${TARE_GATE_COMMIT:-}" "${GITHUB_SHA:-}" "${CI_COMMIT_SHA:-}")
if [ -z "$commit" ]; then
    commit=$(git rev-parse HEAD 2>/dev/null) || {
        say "no commit: run in the repository's checkout, or set TARE_GATE_COMMIT"
        exit 2
    }
fi
baseline=$(first "${TARE_GATE_BASELINE:-}" "${GITHUB_BASE_REF:-}" \
    "${CI_MERGE_REQUEST_TARGET_BRANCH_NAME:-}" "${CI_DEFAULT_BRANCH:-}")
branch=$(first "${TARE_GATE_BRANCH:-}" "${GITHUB_HEAD_REF:-}" "${GITHUB_REF_NAME:-}" \
    "${CI_MERGE_REQUEST_SOURCE_BRANCH_NAME:-}" "${CI_COMMIT_REF_NAME:-}")
summary=${TARE_GATE_SUMMARY:-tare-summary.md}

# The summary says what happened whatever the outcome: a gate never passes in silence.
finish() {
    local code=$1
    if [ -n "${GITHUB_STEP_SUMMARY:-}" ] && [ -f "$summary" ]; then
        cat "$summary" >>"$GITHUB_STEP_SUMMARY"
    fi
    say "summary in $summary; exit $code"
    exit "$code"
}
fail_summary() {
    { echo "## tare history"; echo; echo "**The gate could not judge commit \`${commit:0:10}\`**: $1"; echo; } >"$summary"
}

work=$(mktemp -d "${TMPDIR:-/tmp}/tare-gate.XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT

if [ ${#run_args[@]} -gt 0 ]; then
    say "running the benchmarks: $tare run --export-json … ${run_args[*]}"
    "$tare" run --export-json "$work/results.json" "${run_args[@]}"
    rc=$?
    if [ $rc -ne 0 ]; then
        fail_summary "the benchmarks failed (tare run exited $rc); see the job's log."
        finish 3
    fi
    results+=("$work/results.json")
fi

add_args=(--commit "$commit")
[ -n "$branch" ] && add_args+=(--branch "$branch")
if [ -n "${TARE_SERVER:-}" ] && [ -z "${TARE_STORE:-}" ]; then
    # A server: upload there (TARE_TOKEN), then ask it to judge (POST /api/v1/check).
    "$tare" history add --server "$TARE_SERVER" "${add_args[@]}" "${results[@]}" || {
        rc=$?
        fail_summary "uploading the results to $TARE_SERVER failed (exit $rc); see the job's log."
        finish "$rc"
    }
    curl -fsS -X POST -H "Authorization: Bearer ${TARE_TOKEN:-}" \
        "${TARE_SERVER%/}/api/v1/check" -o "$work/check.json" || {
        fail_summary "the server's check (POST ${TARE_SERVER%/}/api/v1/check) failed; see the job's log."
        finish 3
    }
    {
        echo "## tare history"
        echo
        if grep -q '"kind":"regression"' "$work/check.json"; then
            echo "**New regression alerts** on ${TARE_SERVER%/} after commit \`${commit:0:10}\` (the server judges each series' newest commit with its defaults; see its dashboard):"
            code=1
        else
            echo "**No new regression alert** on ${TARE_SERVER%/} after commit \`${commit:0:10}\` (the server judges each series' newest commit with its defaults; see its dashboard)."
            code=0
        fi
        echo
        echo '```json'
        cat "$work/check.json"
        echo
        echo '```'
    } >"$summary"
    finish "$code"
fi

"$tare" history add "${add_args[@]}" "${results[@]}" || {
    rc=$?
    fail_summary "adding the results to the history failed (exit $rc); see the job's log."
    finish "$rc"
}
check_args=(--commit "$commit" --export-markdown "$summary")
[ -n "$baseline" ] && check_args+=(--baseline-branch "$baseline")
if [ -n "${TARE_GATE_WEBHOOK:-}" ]; then
    check_args+=(--webhook "$TARE_GATE_WEBHOOK")
    link=${CI_JOB_URL:-}
    if [ -n "${GITHUB_RUN_ID:-}" ] && [ -n "${GITHUB_REPOSITORY:-}" ]; then
        link="${GITHUB_SERVER_URL:-}/$GITHUB_REPOSITORY/actions/runs/$GITHUB_RUN_ID"
    fi
    [ -n "$link" ] && check_args+=(--webhook-link "$link")
fi
# shellcheck disable=SC2206 # options split on spaces, as documented
extra=(${TARE_GATE_CHECK_ARGS:-})
rm -f "$summary"
"$tare" history check "${check_args[@]}" "${extra[@]}"
rc=$?
if [ ! -f "$summary" ]; then
    fail_summary "tare history check exited $rc without a summary; see the job's log."
fi
finish "$rc"
