#!/bin/sh
# Runs every client authorization scenario of the MCP conformance suite against
# client.py, two at a time (each is a client process waiting on the suite's servers), and
# prints one line per scenario, in the suite's order: its name and the suite's verdict
# (make conformance-auth). Node 22 and the suite come from package-lock.json.
cd "$(dirname "$0")"
PYTHON="${PYTHON:-../../.venv/bin/python}"
SUITE="node_modules/.bin/node node_modules/.bin/conformance"
# Known and explained in docs/mcp.md's table, all extensions beyond the authorization spec:
# enterprise-managed authorization (an enterprise identity provider's ID token, which
# Glassbox does not hold), DPoP and workload identity federation (neither in the mcp SDK).
EXPECTED="auth/enterprise-managed-authorization auth/dpop auth/dpop-nonce auth/wif-jwt-bearer"

if [ "$1" = "--one" ]; then
    scenario=$2
    # A generous limit: on a busy machine Django alone takes seconds to start.
    out=$($SUITE client --command "$PYTHON client.py" --scenario "$scenario" --timeout 90000 2>&1)
    verdict=$(printf '%s\n' "$out" | sed -n 's/^Passed: \(.*\)$/\1/p' | tail -1)
    overall=$(printf '%s\n' "$out" | grep -o 'OVERALL: [A-Z]*' | tail -1)
    expected=""
    case " $(echo $EXPECTED) " in *" $scenario "*) expected="(expected)" ;; esac
    printf '%-45s %-8s %-28s %s\n' "$scenario" "${overall#OVERALL: }" "$verdict" "$expected"
    [ "${overall#OVERALL: }" = "PASSED" ] || [ -n "$expected" ]
    exit
fi

scenarios=$($SUITE list 2>/dev/null | sed -n 's/^  - \(auth\/[^ ]*\).*/\1/p')
[ -n "$scenarios" ] || { echo "the suite listed no auth scenario" >&2; exit 1; }
results=$(mktemp -d)
trap 'rm -rf "$results"' EXIT
# Each scenario's line lands in a file numbered by its place in the list.
export PYTHON
status=0
printf '%s\n' $scenarios | awk '{ print NR, $0 }' | xargs -P 2 -L 1 sh -c \
    './run.sh --one "$2" > "$0/$(printf %03d "$1")"' "$results" || status=1
cat "$results"/*
exit $status
