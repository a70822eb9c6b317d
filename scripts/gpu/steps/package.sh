# shellcheck shell=bash
# package: the sm_90 package built in /tmp/pkg from RECORDS (JSONL files,
# space-separated), or from the records of the last tune or rows step of this
# call; the verify, example, dispatch, profile and peers steps after it use it.
need_bins fusekit
records=${RECORDS:-}
if [ -z "$records" ] && [ -f "$last_tune" ]; then
  # shellcheck disable=SC1090
  source "$last_tune"
  # shellcheck disable=SC2154
  records=$tune_records
fi
if [ -z "$records" ]; then echo "package: give RECORDS, or run a tune or rows step first" | tee -a "$log"; exit 1; fi
step package of "$records"
# shellcheck disable=SC2086
build_package "$pkg" $records
note build $?
du -sh "$pkg/lib"/* >>"$log" 2>&1
finish
