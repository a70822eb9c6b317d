#!/usr/bin/env bash
# Builds the fusekit command if needed (installing what is missing; not the
# tests), then runs it:
#   scripts/fusekit.sh tune --arch sm_90
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/build.sh" fusekit >/dev/null
exec "$root/${BUILD_DIR:-build}/cli/fusekit" "$@"
