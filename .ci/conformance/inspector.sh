#!/usr/bin/env bash
# Drives `warden serve` (stdio) with the MCP Inspector CLI, a client warden
# does not share code with, and checks that a tools/call of the bundled echo
# tool comes back with the echoed text.
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
cat >"$work/config.yaml" <<YAML
tools:
  dir: $work/tools
  cache_dir: $cache/wasm-cache
  grants:
    echo: {}
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
log "OK"
