#!/usr/bin/env bash
# The report of the committed H200 records (docs/report.md): the newest
# package's records, every record of the tuning runs its winners came from,
# the package built from them, and a screenshot for the docs.
#   scripts/make_h200_report.sh [OUT_DIR]      (default /tmp/fusekit_h200_report; no GPU needed)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-/tmp/fusekit_h200_report}
fusekit=${FUSEKIT:-build/cli/fusekit}
winners=bench/results/2026-12-01-h200-b0d82bd-package-winners.jsonl.gz
rm -rf "$out" && mkdir -p "$out"
# The record files that hold any of the package's winners.
sources=$(python3 - "$winners" <<'PY'
import glob, gzip, json, sys
ids = {json.loads(l)["id"] for l in gzip.open(sys.argv[1], "rt")}
for f in sorted(glob.glob("bench/results/*-records.jsonl.gz")):
    if any(json.loads(l)["id"] in ids for l in gzip.open(f, "rt")):
        print(f)
PY
)
for f in $winners $sources; do "$fusekit" db import --db "$out/h200.db" "$f" >/dev/null; done
"$fusekit" db import --db "$out/pkg.db" "$winners" >/dev/null
"$fusekit" build --arch sm_90 --db "$out/pkg.db" --out "$out/pkg" >/dev/null
"$fusekit" report --db "$out/h200.db" --package "$out/pkg" --out "$out/report-h200.html"
chromium --headless --no-sandbox --disable-gpu --user-data-dir="$out/profile" --virtual-time-budget=30000 \
  --window-size=1400,1800 --screenshot="$out/report-h200.png" "file://$(realpath "$out/report-h200.html")" 2>/dev/null
echo "sources: $(echo $sources | wc -w) record files; page $out/report-h200.html, screenshot $out/report-h200.png"
