#!/usr/bin/env bash
# Runs the official MCP conformance suite (npm @modelcontextprotocol/conformance)
# against `warden serve --http`, serving the fixture tools of
# tools-wasm/conformance, at both protocol revisions warden speaks:
# 2025-11-25 (sessions) and 2026-07-28 (stateless).
#
# Every server scenario runs (--suite all), then, at 2026-07-28, the Tasks
# extension's scenarios (tasks-*, SEP-2663), which --suite all leaves out:
# the suite marks extension scenarios as such and runs them only by name.
# The result is compared with .ci/conformance/expected-failures.txt: the
# script fails on any failure not listed there, and on any listed failure
# that now passes (a stale baseline).
#
# Usage: .ci/conformance/run.sh [-v]
# Env:   WARDEN=path/to/warden   use this binary instead of building ./cmd/warden
#        KEEP=1                  keep the work directory (results, server log)
set -euo pipefail

CONFORMANCE_VERSION=0.2.0-alpha.12   # first line with 2026-07-28 scenarios
SPEC_VERSIONS=(2025-11-25 2026-07-28)

root=$(cd "$(dirname "$0")/../.." && pwd)
cache=$root/.ci/cache
baseline=$root/.ci/conformance/expected-failures.txt
verbose=""
[ "${1:-}" = "-v" ] && verbose=--verbose

log() { echo "conformance: $*" >&2; }
die() { log "$*"; exit 1; }

# --- tools: node 24 and the suite, pinned, installed once into .ci/cache ------
. "$root/.ci/conformance/node.sh"
suite=$(npm_package @modelcontextprotocol/conformance "$CONFORMANCE_VERSION" "$cache/conformance")

# --- warden and the fixture module ---------------------------------------------
work=$(mktemp -d)
server_pid=""
cleanup() {
	if [ -n "$server_pid" ]; then
		kill "$server_pid" 2>/dev/null || true
		wait "$server_pid" 2>/dev/null || true
	fi
	if [ "${KEEP:-}" = 1 ]; then log "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

export GOTOOLCHAIN=local
cd "$root"
warden=${WARDEN:-}
if [ -z "$warden" ]; then
	warden=$work/warden
	go build -o "$warden" ./cmd/warden
fi
"$warden" serve --help >/dev/null 2>&1 || die "$warden has no serve command"
mkdir -p "$work/tools"
GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o "$work/tools/conformance.wasm" ./tools-wasm/conformance

cat >"$work/config.yaml" <<EOF
project:
  root: .
tools:
  dir: tools
  cache_dir: $cache/wasm-cache
  # The fixtures that ask the client, and what each may ask.
  grants:
    test_sampling: {module: conformance, client: [sample]}
    test_missing_capability: {module: conformance, client: [sample]}
    test_input_required_result_sampling: {module: conformance, client: [sample]}
    test_elicitation: {module: conformance, client: [elicit]}
    test_elicitation_sep1034_defaults: {module: conformance, client: [elicit]}
    test_elicitation_sep1330_enums: {module: conformance, client: [elicit]}
    test_input_required_result_elicitation: {module: conformance, client: [elicit]}
    test_input_required_result_request_state: {module: conformance, client: [elicit]}
    test_input_required_result_multi_round: {module: conformance, client: [elicit]}
    test_input_required_result_tampered_state: {module: conformance, client: [elicit]}
    test_input_required_result_list_roots: {module: conformance, client: [roots]}
    test_input_required_result_multiple_inputs: {module: conformance, client: [elicit, sample, roots]}
    test_input_required_result_capabilities: {module: conformance, client: [elicit, sample, roots]}
    confirm_delete: {module: conformance, client: [elicit]}
    multi_input: {module: conformance, client: [elicit]}
    test_tool_with_task: {module: conformance, client: [elicit]}
server:
  token: ""
log:
  level: info
EOF

port=$("$node" -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
url=http://127.0.0.1:$port/mcp
log "starting warden serve on 127.0.0.1:$port"
"$warden" serve --config "$work/config.yaml" --http "127.0.0.1:$port" >"$work/stdout.log" 2>"$work/server.log" &
server_pid=$!
# Loading compiles the module (cached after the first run); wait for the tools.
for _ in $(seq 1 600); do
	if ! kill -0 "$server_pid" 2>/dev/null; then
		cat "$work/server.log" >&2
		die "warden serve exited"
	fi
	if curl -fsS "http://127.0.0.1:$port/healthz" 2>/dev/null | grep -q '"tools":[1-9]'; then
		break
	fi
	sleep 0.2
done
curl -fsS "http://127.0.0.1:$port/healthz" | grep -q '"tools":[1-9]' || die "no tools served after 120 s (see server log)"

# --- baseline --------------------------------------------------------------------
# A line is "<scenario>[:<check>][@<spec version>] <reason>"; without a version
# it applies to both runs. These scenarios may never be baselined: they are
# what warden promises to pass.
protected='^(server-initialize|ping|logging-set-level|tools-list|tools-call-(simple-text|image|audio|embedded-resource|mixed-content|with-logging|error|with-progress|sampling|elicitation)|elicitation-sep[0-9]+-[a-z]+|json-schema-2020-12|dns-rebinding-protection)([:@ ]|$)'
entries() { awk '!/^[[:space:]]*(#|$)/' "$baseline"; }
if entries | grep -E "$protected" >&2; then
	die "the lines above baseline a scenario that must pass"
fi
entries | awk 'NF < 2 { print; bad = 1 } END { exit bad }' >&2 ||
	die "the lines above have no reason after the scenario"

# --- run -------------------------------------------------------------------------
status=0
for spec in "${SPEC_VERSIONS[@]}"; do
	yaml=$work/expected-$spec.yml
	entries | awk -v spec="$spec" '
		BEGIN { print "server:" }
		{
			entry = $1; at = index(entry, "@")
			if (at > 0) { if (substr(entry, at + 1) != spec) next; entry = substr(entry, 1, at - 1) }
			print "  - \"" entry "\""; n++
		}
		END { if (!n) print "  []" }' >"$yaml"
	log "running every server scenario at $spec"
	if ! (cd "$work" && "$node" "$suite/dist/index.js" server --url "$url" --suite all \
		--spec-version "$spec" --expected-failures "$yaml" -o "$work/results-$spec" $verbose) \
		>"$work/suite-$spec.log" 2>&1; then
		status=1
	fi
	sed -n '/=== SUMMARY ===/,$p' "$work/suite-$spec.log"
	if [ "$status" != 0 ] || [ -n "$verbose" ]; then
		grep -E 'unexpected|Unexpected|stale|Stale|no longer|regression' "$work/suite-$spec.log" || true
	fi
done

# The Tasks extension's scenarios, each by name (the server command runs an
# extension scenario only so), at the revision that defines the extension:
# the suite keeps extension scenarios off its spec timeline, so --force runs
# them at 2026-07-28 (its wire, and its wire-schema checks).
tasks_spec=2026-07-28
tasks_scenarios=$("$node" "$suite/dist/index.js" list --server | sed -n 's/^  - \(tasks-[a-z0-9-]*\) \[extension\]$/\1/p')
[ -n "$tasks_scenarios" ] || die "the suite lists no tasks-* extension scenarios"
for scenario in $tasks_scenarios; do
	log "running $scenario at $tasks_spec"
	if ! (cd "$work" && "$node" "$suite/dist/index.js" server --url "$url" --scenario "$scenario" \
		--spec-version "$tasks_spec" --force --expected-failures "$work/expected-$tasks_spec.yml" \
		-o "$work/results-$tasks_spec" $verbose) >"$work/suite-$scenario.log" 2>&1; then
		status=1
		cat "$work/suite-$scenario.log"
	elif [ -n "$verbose" ]; then
		cat "$work/suite-$scenario.log"
	else
		grep -E '^Passed:|^  ~ ' "$work/suite-$scenario.log" || true
	fi
	if grep -q 'SKIPPED: scenario' "$work/suite-$scenario.log"; then
		status=1
		log "$scenario did not run (see $work/suite-$scenario.log)"
	fi
done

if [ "$status" != 0 ]; then
	log "FAILED: an unexpected failure or an unexpected pass (see above; KEEP=1 keeps $work)"
	tail -n 30 "$work/server.log" >&2
	exit 1
fi
log "OK: only the failures listed in $(basename "$baseline")"
