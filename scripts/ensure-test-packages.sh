#!/usr/bin/env bash
# Debian packages the test suite drives for real: bubblewrap (the python-grader sandbox) and
# Chromium (the console's browser tests). Install what is missing; where it cannot be
# installed (no root, no apt), say so: the tests that need it then skip with the reason.
set -u
CHROMIUM="${POSTTRAIN_CHROMIUM:-/usr/bin/chromium}"
missing=()
command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
[ -x "$CHROMIUM" ] || missing+=(chromium)
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1 || [ "$(id -u)" != "0" ]; then
  echo "ensure-test-packages: ${missing[*]} missing and no root apt-get here; the tests that" \
       "need them will be skipped" >&2
  exit 0
fi
echo "ensure-test-packages: installing Debian's ${missing[*]} for the tests" >&2
if ! apt-get install -y -q "${missing[@]}" >/dev/null 2>&1; then
  apt-get update -q >/dev/null 2>&1 && apt-get install -y -q "${missing[@]}" >/dev/null 2>&1 || \
    echo "ensure-test-packages: apt-get install ${missing[*]} failed; the tests that need" \
         "them will be skipped" >&2
fi
exit 0
