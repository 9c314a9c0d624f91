#!/bin/sh
# Writes docker/.env (read by `docker compose -f docker/compose.yaml`) with fresh random keys,
# once: an existing file is kept, so keys do not change under running data. compose.yaml has no
# default keys and refuses to start without these.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
env_file="$here/.env"
if [ -e "$env_file" ]; then
  echo "$env_file exists; keeping its keys" >&2
  exit 0
fi
# 24 random bytes as hex, from the kernel's generator (no openssl needed).
random_hex() { od -An -N24 -tx1 /dev/urandom | tr -d ' \n'; }
umask 077
{
  echo "API_KEY=$(random_hex)"
  echo "MINIO_ROOT_USER=ew-$(random_hex | cut -c1-12)"
  echo "MINIO_ROOT_PASSWORD=$(random_hex)"
  # Browser profiles (docs/profiles.md): key id "k1", 32 random bytes in base64.
  echo "PROFILE_KEYS=k1:$(head -c 32 /dev/urandom | base64 | tr -d '\n')"
} > "$env_file"
echo "wrote $env_file (API_KEY is the dashboard's key)" >&2
