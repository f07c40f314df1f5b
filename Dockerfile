# syntax=docker/dockerfile:1
# xiaozhi-ts-server: the voice server as compiled JavaScript on Node 24, with the embedded
# providers' programs (ffmpeg, espeak-ng, pocketsphinx). Build: `docker build -t xiaozhi-server .`
# (or `buildah bud`, see docs/deployment.md). Run: `docker run -p 8000:8000 xiaozhi-server`.
#
# Stages, ordered so that a source change rebuilds only `build` and the final COPY layers:
#   deps       all npm packages (dev too), the native Opus module compiled here
#   prod-deps  deps minus dev packages, minus other platforms' binaries and the npm Node package
#   build      TypeScript -> dist/
#   native     build/espeak-pcm, the embedded TTS's native espeak-ng helper (C, against libespeak-ng1),
#              and build/pocketsphinx-stream, the embedded ASR's streaming helper (C, against libpocketsphinx3)
#   runtime    node + apt runtime packages + prod-deps + dist, non-root

ARG NODE_IMAGE=node:24-bookworm-slim

FROM ${NODE_IMAGE} AS deps
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
# node-gyp compiles @discordjs/opus (its prebuilt binary lives on GitHub, often out of reach) and
# would fetch Node's headers from nodejs.org: the base image already has them in /usr/local.
ENV npm_config_nodedir=/usr/local \
    ONNXRUNTIME_NODE_INSTALL=skip \
    JOBS=max
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund --loglevel=warn \
 && node -e "require('@discordjs/opus'); new (require('better-sqlite3'))(':memory:').close()" \
 || { echo 'npm ci failed, or @discordjs/opus did not build, or better-sqlite3 does not load' >&2; exit 1; }

FROM deps AS prod-deps
# tsx is a runtime dependency only for `npm start` from sources; the image runs compiled JS.
RUN npm pkg delete dependencies.tsx \
 && npm prune --omit=dev --no-audit --no-fund --loglevel=warn \
 # The registry's Node package (optionalDependencies: it runs the project's npm scripts where the
 # machine's node is older) duplicates the base image's Node 24, which the image runs on (~190 MB).
 && rm -rf node_modules/node-linux-* node_modules/.bin/node \
 # onnxruntime-node ships binaries for every OS and CPU (~290 MB); keep this platform's only.
 && arch="$(node -p process.arch)" \
 && ort=node_modules/onnxruntime-node/bin/napi-v6 \
 && find "$ort" -mindepth 1 -maxdepth 1 ! -name linux -exec rm -rf {} + \
 && find "$ort/linux" -mindepth 1 -maxdepth 1 ! -name "$arch" -exec rm -rf {} + \
 && test -f "$ort/linux/$arch/onnxruntime_binding.node" \
 # @discordjs/opus: keep the built module (prebuild/), drop the libopus sources and objects.
 && rm -rf node_modules/@discordjs/opus/deps node_modules/@discordjs/opus/build-tmp-napi-v3 \
 # better-sqlite3: keep this platform's prebuilt module (glibc), drop the others' and the SQLite
 # sources (~25 MB).
 && b=node_modules/better-sqlite3 && rm -rf "$b/deps" "$b/src" \
 && find "$b/prebuilds" -mindepth 1 ! -name "linux-$arch.node" -delete \
 && node -e "require('@discordjs/opus'); require('onnxruntime-node'); new (require('better-sqlite3'))(':memory:').close()" \
 && find node_modules -type f \( -name '*.md' -o -name '*.map' -o -name '*.ts' ! -name '*.d.ts' \) -delete

FROM deps AS build
# One COPY: .dockerignore lets through only the sources and the build configuration.
COPY . .
RUN npx tsc -p tsconfig.build.json

FROM deps AS native
# Linked against the runtime libraries the runtime stage's espeak-ng and pocketsphinx packages
# bring (same Debian release); no -dev package is needed. A failed build is an error here, not a
# silent fallback (WASM espeak-ng, pocketsphinx_continuous without partials).
RUN apt-get update \
 && apt-get install -y --no-install-recommends libespeak-ng1 libpocketsphinx3 \
 && rm -rf /var/lib/apt/lists/*
COPY scripts/build-espeak-helper.sh scripts/build-pocketsphinx-helper.sh scripts/
COPY audio/tts/native/espeak-pcm.c audio/tts/native/
COPY providers/pocketsphinx/native/pocketsphinx-stream.c providers/pocketsphinx/native/
RUN bash scripts/build-espeak-helper.sh && test -x build/espeak-pcm \
 && bash scripts/build-pocketsphinx-helper.sh && test -x build/pocketsphinx-stream

FROM ${NODE_IMAGE} AS runtime
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
# ffmpeg: any audio -> PCM; espeak-ng: embedded TTS; pocketsphinx: embedded ASR; tini: PID 1 that
# forwards SIGTERM to Node and reaps the TTS/ASR children.
# ffmpeg's SDL/X11 output devices pull Mesa's GPU drivers and LLVM (~160 MB). A headless server
# never loads them (they are dlopen()ed, not linked, as the checks below prove), so dpkg leaves
# their files out (path-exclude), with docs, man pages and translations. The packages stay
# installed: apt's database is consistent (`apt-get check` below), so images built FROM this one
# can `apt-get install` more. Need Mesa back? Delete /etc/dpkg/dpkg.cfg.d/xiaozhi-slim and
# `apt-get install --reinstall libgl1-mesa-dri libllvm15 libz3-4`.
RUN printf '%s\n' \
      'path-exclude=/usr/lib/*/dri/*' \
      'path-exclude=/usr/lib/*/libLLVM-15.so*' \
      'path-exclude=/usr/lib/llvm-15/*' \
      'path-exclude=/usr/lib/*/libz3.so*' \
      'path-exclude=/usr/share/doc/*' \
      'path-include=/usr/share/doc/*/copyright' \
      'path-exclude=/usr/share/man/*' \
      'path-exclude=/usr/share/info/*' \
      'path-exclude=/usr/share/locale/*' \
      > /etc/dpkg/dpkg.cfg.d/xiaozhi-slim \
 && apt-get update \
 && apt-get install -y --no-install-recommends ffmpeg espeak-ng pocketsphinx pocketsphinx-en-us tini \
 && apt-get check \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/* /var/log/apt /var/log/dpkg.log \
 && test "$(ffmpeg -hide_banner -loglevel error -f lavfi -i sine=d=0.5 -ac 1 -ar 16000 -f s16le - | wc -c)" = 16000 \
 && espeak-ng -w /tmp/check.wav hello && test -s /tmp/check.wav && rm /tmp/check.wav \
 && command -v pocketsphinx_continuous >/dev/null \
 && test -d /usr/share/pocketsphinx/model/en-us
# /data: the server's one writable directory (server.dataDir, set below by XIAOZHI_DATA_DIR): the
# SQLite database (xiaozhi.db) unless store.url names a PostgreSQL. Owned by the `node` user the
# server runs as, and a volume (compose mounts a named one). `devices` on PATH is the operator's
# CLI (bind, list, revoke), compiled from scripts/devices.ts: `docker compose exec server devices list`;
# `db migrate` runs the schema migrations apart from a start (scripts/db.ts).
RUN mkdir /data && chown node:node /data \
 && printf '%s\n' '#!/bin/sh' 'exec node /app/dist/scripts/devices.js "$@"' > /usr/local/bin/devices \
 && printf '%s\n' '#!/bin/sh' 'exec node /app/dist/scripts/db.js "$@"' > /usr/local/bin/db \
 && chmod 755 /usr/local/bin/devices /usr/local/bin/db
VOLUME /data
WORKDIR /app
# XIAOZHI_BIND_COMMAND: what the activation message tells the owner to run (the `devices` above,
# not the sources' `npm run devices --`).
ENV NODE_ENV=production \
    TINI_SUBREAPER=1 \
    HOST=0.0.0.0 \
    PORT=8000 \
    XIAOZHI_DATA_DIR=/data \
    XIAOZHI_BIND_COMMAND="devices bind {code} in the server's container (docker compose exec server devices bind {code})"
# Metadata first, code last: a source change rebuilds only the COPY layers below.
# 8000: HTTP and the device WebSocket. 1883 (8883 with TLS) and 8884/udp: the MQTT broker and
# the audio socket, listening only with mqtt.enabled.
EXPOSE 8000 1883 8884/udp
# /healthz answers while the event loop runs; PORT is what the server listens on (env override).
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8000)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# Compose's default stop grace is 10 s; server.drainTimeoutMs (4 s) + 1 s close fits inside it.
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/bin/tini", "--"]
# --max-semi-space-size=16: the same node flags as `npm start` (package.json), why in BENCHMARKS.md.
CMD ["node", "--max-semi-space-size=16", "dist/server/main.js"]
# Root owns the code (read-only to the server); the server runs as the base image's unprivileged
# `node` user (uid 1000) and keeps its state only in /data.
USER node
COPY package.json ./
COPY --from=prod-deps /app/node_modules ./node_modules
COPY --from=native /app/build/espeak-pcm ./build/espeak-pcm
COPY --from=native /app/build/pocketsphinx-stream ./build/pocketsphinx-stream
COPY --from=build /app/dist ./dist
COPY web ./web
