#!/usr/bin/env bash
# Installs what the server needs on Debian/Ubuntu with Node >= 20:
#   system packages  ffmpeg espeak-ng pocketsphinx pocketsphinx-en-us (the embedded TTS/ASR and transcoding)
#   npm packages     npm ci (builds @discordjs/opus from source when no prebuilt binary can be fetched)
# With --test it also installs what the test suite uses: flite (test speech), sox, chromium (browser tests),
# postgresql (the store tests start a throwaway cluster with its initdb and pg_ctl), nginx (the
# replicas stack's proxy configuration runs in it; the tests start their own, never the service).
set -euo pipefail
cd "$(dirname "$0")/.."

packages="ffmpeg espeak-ng pocketsphinx pocketsphinx-en-us"
if [ "${1:-}" = "--test" ]; then packages="$packages flite sox chromium postgresql nginx"; fi

missing=""
for p in $packages; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
if [ -n "$missing" ]; then
  if [ "$(id -u)" = 0 ]; then run=""; elif command -v sudo >/dev/null; then run="sudo"; else
    echo "setup: please install these Debian packages first:$missing" >&2; exit 1
  fi
  echo "setup: installing$missing"
  export DEBIAN_FRONTEND=noninteractive
  $run apt-get update -q
  $run apt-get install -y -q --no-install-recommends $missing
fi

# onnxruntime-node's postinstall only downloads a CUDA provider from NuGet (unreachable offline
# and unused); the CPU binaries are in its tarball. JOBS=max halves the Opus native build time.
export ONNXRUNTIME_NODE_INSTALL=skip JOBS=max
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund
fi

# The embedded TTS's native espeak-ng helper (about 5× cheaper than the WebAssembly build).
bash scripts/build-espeak-helper.sh
