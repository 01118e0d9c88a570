#!/usr/bin/env bash
# The console's browser tests drive Debian's Chromium. Install it where it is missing; where
# it cannot be installed (no root, no apt), say so: those tests then skip with the reason.
set -u
CHROMIUM="${POSTTRAIN_CHROMIUM:-/usr/bin/chromium}"
if [ -x "$CHROMIUM" ]; then
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1 || [ "$(id -u)" != "0" ]; then
  echo "ensure-chromium: no $CHROMIUM and no root apt-get here; browser tests will be skipped" >&2
  exit 0
fi
echo "ensure-chromium: installing Debian's chromium for the console's browser tests" >&2
if ! apt-get install -y -q chromium >/dev/null 2>&1; then
  apt-get update -q >/dev/null 2>&1 && apt-get install -y -q chromium >/dev/null 2>&1 || \
    echo "ensure-chromium: apt-get install chromium failed; browser tests will be skipped" >&2
fi
exit 0
