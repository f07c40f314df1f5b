#!/usr/bin/env bash
# Builds build/pocketsphinx-stream, the embedded recogniser's streaming helper
# (providers/pocketsphinx/native/). It links the runtime libraries of Debian's pocketsphinx
# package (libpocketsphinx3, libsphinxbase3); no -dev package is needed. Without a C compiler or
# the libraries, the server recognises with pocketsphinx_continuous (no partial transcripts).
set -euo pipefail
cd "$(dirname "$0")/.."
src=providers/pocketsphinx/native/pocketsphinx-stream.c
out=build/pocketsphinx-stream
if [ -x "$out" ] && [ "$out" -nt "$src" ]; then exit 0; fi
mkdir -p build
if "${CC:-cc}" -O2 -Wall -o "$out.tmp" "$src" -l:libpocketsphinx.so.3 -l:libsphinxbase.so.3; then
  mv "$out.tmp" "$out"
  echo "setup: built $out (streaming pocketsphinx for the embedded ASR)"
else
  rm -f "$out.tmp"
  echo "setup: $out not built (see above: a C compiler and libpocketsphinx3 are needed); the embedded ASR runs pocketsphinx_continuous, without partial transcripts" >&2
fi
