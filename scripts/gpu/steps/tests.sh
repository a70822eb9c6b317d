# shellcheck shell=bash
# tests: the GPU tests (ctest label gpu, the gpu_test binary) -> gpu_test.json.
# TEST_TIMEOUT (300 s), TEST_FILTER (a --gtest_filter).
need_bins gpu_test
step gpu tests
run_gpu_tests "${TEST_TIMEOUT:-300}"
finish
