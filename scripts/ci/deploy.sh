#!/usr/bin/env bash
# CI: the tools tests/faces/test_deploy.py checks the deployment files with, from Debian,
# installed only when missing: caddy (`caddy validate` of deploy/Caddyfile) and
# systemd-analyze (`verify` of deploy/systemd/). The test fails under CI=true without them.
set -euo pipefail
need=()
command -v caddy >/dev/null || need+=(caddy)
command -v systemd-analyze >/dev/null || need+=(systemd)
if [ ${#need[@]} -eq 0 ]; then
  exit 0
fi
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
$SUDO apt-get update -q
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${need[@]}"
# Debian's caddy package enables a caddy service where systemd runs: the test needs the binary only
if [[ " ${need[*]} " == *" caddy "* ]] && [ -d /run/systemd/system ]; then
  $SUDO systemctl disable --now caddy >/dev/null 2>&1 || true
fi
