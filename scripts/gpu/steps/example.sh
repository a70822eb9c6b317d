# shellcheck shell=bash
# example: examples/fused_relu_add built against the package and run (it
# checks the fused call against the unfused kernels), then under memcheck ->
# example.txt.
need_package
step example against the package
{ cmake -S examples/fused_relu_add -B /tmp/ex -DCMAKE_PREFIX_PATH="$pkg" \
    -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc && cmake --build /tmp/ex; } >>"$log" 2>&1
note "example build" $?
/tmp/ex/fused_relu_add >"$out/example.txt" 2>&1
note example $?
"${memcheck[@]}" /tmp/ex/fused_relu_add >>"$out/example.txt" 2>&1
note "memcheck example" $?
grep "ERROR SUMMARY" "$out/example.txt" | tee -a "$log"
finish
