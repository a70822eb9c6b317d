#!/usr/bin/env bash
# Several GPU session scripts in one device call, one after another, each
# writing into a folder of its own: a call returns at most 8 files, so the
# folders come back as one tarball, with each step's log.txt beside it.
#
#   OUT=... bash scripts/gpu_in_turn.sh \
#     probe 'VARIANTS=.probe/smta-pf HAND= OP=sigmoid_mul_tanh_add bash scripts/gpu_gap_session.sh' \
#     rows 'OPS=softmax SIZES=1024x65536 SKIP_TESTS=1 bash scripts/gpu_reduction_session.sh'
#
# Each COMMAND runs through bash with OUT set to /tmp/in-turn/LABEL. Writes
# $OUT/results.tar.gz (every folder), $OUT/LABEL-log.txt and
# $OUT/in_turn.txt (each step's exit status and seconds).
set -uo pipefail
out=${OUT:?set OUT to a results folder}
if [ $# -eq 0 ] || [ $(($# % 2)) -ne 0 ]; then
  echo "usage: gpu_in_turn.sh LABEL COMMAND [LABEL COMMAND]..." >&2
  exit 2
fi
labels=()
for ((i = 1; i <= $#; i += 2)); do
  label=${!i}
  case $label in *[!A-Za-z0-9_-]*|'') echo "label '$label': use letters, digits, - and _" >&2; exit 2 ;; esac
  case " ${labels[*]} " in *" $label "*) echo "label '$label' given twice" >&2; exit 2 ;; esac
  labels+=("$label")
done
root=/tmp/in-turn
rm -rf "$root"
mkdir -p "$root" "$out"
: >"$out/in_turn.txt"
while [ $# -gt 0 ]; do
  label=$1 command=$2
  shift 2
  mkdir -p "$root/$label"
  start=$(date +%s)
  OUT="$root/$label" bash -c "$command"
  echo "$label rc=$? $(($(date +%s) - start)) s" | tee -a "$out/in_turn.txt"
  [ -f "$root/$label/log.txt" ] && cp "$root/$label/log.txt" "$out/$label-log.txt"
done
tar -czf "$out/results.tar.gz" -C "$root" "${labels[@]}"
