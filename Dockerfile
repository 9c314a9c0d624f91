# syntax=docker/dockerfile:1
#
# The execution worker image. One image, two roles:
#   worker (default):  node dist/main.js                      health on HEALTH_PORT (9090)
#   local API:         node bin/execution-worker.js serve     API + dashboard on PORT (8080)
#
# Build from the repository root:  docker build -t execution-worker .
# Chromium runs as the non-root user `worker` with its sandbox ON. Its sandbox needs user
# namespaces, which Docker's default seccomp profile refuses: run the container with
# docker/seccomp/chromium.json (see docker/README.md), never with --no-sandbox.

# Node LTS on Debian bookworm, whose `chromium` package follows Chrome stable through security
# updates. Build and runtime share the base so native modules match the runtime's libc.
ARG NODE_IMAGE=node:22-bookworm-slim

# ---------------------------------------------------------------------------------------------
FROM ${NODE_IMAGE} AS build
WORKDIR /app

# Dependencies first, in their own layer, so a source change does not reinstall them.
# --ignore-scripts: `npm ci` would run the `prepare` script (the build) before the sources are
# copied; the build runs explicitly below. No dependency needs an install script to work
# (msgpackr-extract ships prebuilt binaries and falls back to pure JS).
# Behind a TLS-intercepting proxy, pass its CA bundle as the build secret `npm-ca`
# (scripts/image-build.sh passes npm's `cafile`): a secret is mounted for this step only and never
# lands in a layer. Without it every fetch fails with SELF_SIGNED_CERT_IN_CHAIN, which npm 10
# reports only as "Exit handler never called!".
COPY package.json package-lock.json ./
RUN --mount=type=secret,id=npm-ca \
    if [ -s /run/secrets/npm-ca ]; then export NODE_EXTRA_CA_CERTS=/run/secrets/npm-ca; fi \
 && npm ci --ignore-scripts --no-audit --no-fund

COPY tsconfig.json tsconfig.build.json ./
# The build's own scripts: the page scripts, the dashboard's bundle, the typed client's types.
COPY scripts/build-page-scripts.ts scripts/build-dashboard.ts scripts/build-client-types.ts ./scripts/
COPY src ./src
RUN npm run build \
 && npm prune --omit=dev --ignore-scripts --no-audit --no-fund

# ---------------------------------------------------------------------------------------------
FROM ${NODE_IMAGE} AS runtime

# chromium-headless-shell, ffmpeg: Debian's builds (CHROMIUM_PATH, FFMPEG_PATH below). The shell
# is Chromium without the browser's UI: about half the CPU per execution (README, Benchmarks).
# Full chromium is not installed: a container has no window to show it in, and leaving it out
# keeps about 300 MB and the GTK stack out of the image.
# fonts-liberation: metric-compatible Arial/Times/Courier so pages lay out as on a desktop.
# fonts-noto-color-emoji: emoji render as glyphs, not boxes, in screenshots and video.
# tini: PID 1 that forwards SIGTERM to node and reaps Chromium's exited children.
# ca-certificates: TLS to the API, S3 and Anthropic.
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      chromium-headless-shell ffmpeg fonts-liberation fonts-noto-color-emoji tini ca-certificates \
 && rm -rf /var/lib/apt/lists/*

# A fixed uid/gid so Kubernetes can check runAsNonRoot and set fsGroup; Chromium keeps its
# profile and caches under the home directory.
RUN groupadd --system --gid 10001 worker \
 && useradd --uid 10001 --gid worker --create-home --home-dir /home/worker \
      --shell /usr/sbin/nologin worker

WORKDIR /app
# The application stays owned by root: the runtime user can read it, not change it.
COPY --from=build /app/package.json ./package.json
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY bin ./bin
# The local API serves the dashboard's static files from this path at runtime: the one place the
# image names it (static-files.ts's dashboardDir() is the source; test/unit/deploy-manifests checks).
# From the build: the dashboard's bundle (app.js) is made there, beside its static files.
COPY --from=build /app/src/local-service/dashboard ./src/local-service/dashboard
# ARTIFACTS_DIR defaults to ./artifacts: the only folder under /app the worker writes to.
RUN mkdir -p /app/artifacts && chown worker:worker /app/artifacts

ENV NODE_ENV=production \
    HOME=/home/worker \
    CHROMIUM_PATH=/usr/bin/chromium-headless-shell \
    FFMPEG_PATH=/usr/bin/ffmpeg \
    HEALTH_PORT=9090

USER worker

# 9090: worker /healthz, /readyz, /metrics. 8080: local API and dashboard (`serve`).
EXPOSE 9090 8080

# Node's own fetch: no curl in the image. The `serve` role answers /healthz on PORT instead;
# compose overrides this check for it.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.HEALTH_PORT || '9090') + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]

# The daemon drains on SIGTERM (docs/operations.md#signals-and-shutdown). tini passes it on; the exec form below keeps node
# a direct child of tini, not of a shell that would swallow the signal.
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["node", "dist/main.js"]
