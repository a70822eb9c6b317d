# shellcheck shell=bash
# rematch: the full run's winner and a guided run's pick timed again side by
# side (bench/guided_rematch) from exports carried in, for runs of earlier
# calls -> NAME.json / NAME.txt per pair. PAIRS: "NAME:FULL:GUIDED ..."
# (`fusekit db export` files, .gz or not); MAX_TIMED: the guided pick is the
# fastest of its first MAX_TIMED timed (default 8; 100000: its final winner).
need_bins guided_rematch
: "${PAIRS:?set PAIRS to NAME:FULL.jsonl.gz:GUIDED.jsonl.gz ...}"
for pair in $PAIRS; do
  IFS=: read -r name full guided <<<"$pair"
  step "rematch $name (guided pick after at most ${MAX_TIMED:-8} timed)"
  "$bin/guided_rematch" "$full" "$guided" "$out/$name.json" "${MAX_TIMED:-8}" \
    >"$out/$name.txt" 2>>"$log"
  note "rematch_$name" $?
  cat "$out/$name.txt" >>"$log"
done
finish
