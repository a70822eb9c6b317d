#!/usr/bin/env bash
# Builds fusekit if needed (installing what is missing), then runs it:
#   scripts/fusekit.sh tune --arch sm_90
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/build.sh" >/dev/null
exec "$root/${BUILD_DIR:-build}/cli/fusekit" "$@"
