#!/usr/bin/env bash
# One command for a newcomer (`npm run demo`): installs what is missing, then runs demo/run.ts.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || [ -n "${CHROMIUM_PATH:-}" ] || missing+=(chromium)
command -v ffmpeg >/dev/null 2>&1 || [ -n "${FFMPEG_PATH:-}" ] || missing+=(ffmpeg)
command -v redis-server >/dev/null 2>&1 || [ -n "${REDIS_URL:-}" ] || missing+=(redis-server)
if [ ${#missing[@]} -gt 0 ]; then
  if command -v apt-get >/dev/null 2>&1 && { [ "$(id -u)" -eq 0 ] || command -v sudo >/dev/null 2>&1; }; then
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    echo "Installing ${missing[*]} with apt-get …"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" fonts-liberation >/dev/null
  else
    echo "Missing: ${missing[*]}. Install them, for example:"
    echo "  sudo apt-get install -y ${missing[*]} fonts-liberation"
    echo "or point CHROMIUM_PATH / FFMPEG_PATH / REDIS_URL at what you have."
    exit 1
  fi
fi

if [ ! -d node_modules ] || [ ! -d dist ]; then
  echo "Installing npm dependencies (npm ci) …"
  npm ci --no-audit --no-fund
fi

exec node --import tsx demo/run.ts "$@"
