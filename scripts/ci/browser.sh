#!/usr/bin/env bash
# CI: the headless browser the web page's test drives (Debian's chromium and chromium-driver),
# installed only when missing. tests/faces/test_server_browser.py fails under CI=true without it.
set -euo pipefail
if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then
  exit 0
fi
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
$SUDO apt-get update -q
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q chromium chromium-driver
