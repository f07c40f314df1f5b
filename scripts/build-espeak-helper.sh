#!/usr/bin/env bash
# Builds build/espeak-pcm, the native espeak-ng helper of the embedded TTS (audio/tts/native/).
# It links the runtime library of Debian's espeak-ng package (libespeak-ng1); no -dev package is
# needed. Without a C compiler or the library, the server uses espeak-ng's WebAssembly build.
set -euo pipefail
cd "$(dirname "$0")/.."
src=audio/tts/native/espeak-pcm.c
out=build/espeak-pcm
if [ -x "$out" ] && [ "$out" -nt "$src" ]; then exit 0; fi
mkdir -p build
if "${CC:-cc}" -O2 -Wall -o "$out.tmp" "$src" -l:libespeak-ng.so.1 -lm; then
  mv "$out.tmp" "$out"
  echo "setup: built $out (native espeak-ng for the embedded TTS)"
else
  rm -f "$out.tmp"
  echo "setup: $out not built (see above: a C compiler and libespeak-ng1 are needed); the embedded TTS uses the WebAssembly build" >&2
fi
