# shellcheck shell=bash
# dispatch: the dispatch runtime's benchmarks (bench/dispatch_bench: variant
# selection, a package launch against a raw cuLaunchKernel, a CUDA graph) ->
# dispatch_bench.json. Needs .device/debs-bench carried.
need_bins dispatch_bench
step dispatch benchmarks
timeout 120 "$bin/dispatch_bench" --benchmark_repetitions=5 --benchmark_out="$out/dispatch_bench.json" \
  --benchmark_out_format=json >>"$log" 2>&1
note dispatch_bench $?
finish
