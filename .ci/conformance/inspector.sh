#!/usr/bin/env bash
# Drives `warden serve` (stdio) with the MCP Inspector CLI, a client warden
# does not share code with, and checks that a tools/call of the bundled echo
# tool comes back with the echoed text, and that the conformance fixture's
# resources, resource template and prompts are listed, read and got.
#
# Usage: .ci/conformance/inspector.sh
# Env:   WARDEN=path/to/warden   use this binary instead of building ./cmd/warden
set -euo pipefail

INSPECTOR_VERSION=2.12.0

root=$(cd "$(dirname "$0")/../.." && pwd)
cache=$root/.ci/cache
log() { echo "inspector: $*" >&2; }
die() { log "$*"; exit 1; }

. "$root/.ci/conformance/node.sh"
pkg=$(npm_package @modelcontextprotocol/inspector "$INSPECTOR_VERSION" "$cache/inspector")
inspector=$pkg/$("$node" -p "require('$pkg/package.json').bin['mcp-inspector']")

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export GOTOOLCHAIN=local
cd "$root"
warden=${WARDEN:-}
if [ -z "$warden" ]; then
	warden=$work/warden
	go build -o "$warden" ./cmd/warden
fi
warden=$(cd "$(dirname "$warden")" && pwd)/$(basename "$warden")
mkdir -p "$work/tools"
GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o "$work/tools/echo.wasm" ./tools-wasm/echo
GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o "$work/tools/conformance.wasm" ./tools-wasm/conformance
cat >"$work/config.yaml" <<YAML
tools:
  dir: $work/tools
  cache_dir: $cache/wasm-cache
  grants:
    echo: {}
server:
  list_wait: 5m   # a cold compile cache compiles both modules first
YAML

text="warden says hi over stdio $$"
log "tools/call echo through the MCP Inspector CLI $INSPECTOR_VERSION"
out=$(timeout 300 "$node" "$inspector" --cli -e "WARDEN_CONFIG=$work/config.yaml" --cwd "$work" \
	"$warden" serve --method tools/call --tool-name echo --tool-arg "text=$text") ||
	die "the inspector failed (exit $?): $out"
echo "$out"
# The result must carry the text as content and as structured content, and no error.
echo "$out" | "$node" -e '
	const r = JSON.parse(require("fs").readFileSync(0, "utf8"));
	const want = process.argv[1];
	const ok = !r.isError && r.content?.[0]?.type === "text" && r.content[0].text === want &&
		r.structuredContent?.text === want;
	if (!ok) { console.error("unexpected result"); process.exit(1); }
' "$text" || die "the echoed text is not in the result"

# inspect METHOD [ARGS...]: run one request through the Inspector CLI.
inspect() {
	timeout 300 "$node" "$inspector" --cli -e "WARDEN_CONFIG=$work/config.yaml" --cwd "$work" \
		"$warden" serve --method "$@"
}
# check OUTPUT JS: fail unless the JS expression holds for the parsed result r.
check() {
	echo "$1" | "$node" -e '
		const r = JSON.parse(require("fs").readFileSync(0, "utf8"));
		if (!(eval(process.argv[1]))) { console.error("unexpected result"); process.exit(1); }
	' "$2"
}

log "resources/list, resources/templates/list, resources/read through the Inspector CLI"
out=$(inspect resources/list) || die "resources/list failed: $out"
echo "$out"
check "$out" 'r.resources.some(x => x.uri === "test://static-text") && r.resources.some(x => x.uri === "test://static-binary")' ||
	die "resources/list lacks the fixture's resources"
out=$(inspect resources/templates/list) || die "resources/templates/list failed: $out"
echo "$out"
check "$out" 'r.resourceTemplates.some(x => x.uriTemplate === "test://template/{id}/data")' ||
	die "resources/templates/list lacks the fixture's template"
out=$(inspect resources/read --uri test://static-text) || die "resources/read failed: $out"
echo "$out"
check "$out" 'r.contents[0].text === "This is the content of the static text resource."' ||
	die "resources/read returned the wrong content"

log "prompts/list, prompts/get through the Inspector CLI"
out=$(inspect prompts/list) || die "prompts/list failed: $out"
echo "$out"
check "$out" '["test_simple_prompt", "test_prompt_with_arguments", "test_prompt_with_embedded_resource", "test_prompt_with_image"].every(n => r.prompts.some(p => p.name === n))' ||
	die "prompts/list lacks the fixture's prompts"
out=$(inspect prompts/get --prompt-name test_prompt_with_arguments --prompt-args arg1=hello arg2=world) || die "prompts/get failed: $out"
echo "$out"
check "$out" 'r.messages[0].content.text === "Prompt with arguments: arg1='"'"'hello'"'"', arg2='"'"'world'"'"'"' ||
	die "prompts/get returned the wrong messages"
log "OK"
