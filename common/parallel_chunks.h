// Runs fn(begin, end, chunk) over [0, n) in up to hardware_concurrency()
// (or max_workers) contiguous chunks of at least min_chunk (one when n is
// small); chunk k covers lower indices than k + 1. For the host-side passes
// over whole tensors (inputs, references, comparisons), which would otherwise
// take a core for seconds at 2^26 elements, and a model's feature rows.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <vector>

namespace fusekit {

template <typename Fn>
void parallel_chunks(int64_t n, Fn fn, int64_t min_chunk = int64_t{1} << 20, int64_t max_workers = 0) {
  const int64_t cores = max_workers > 0 ? max_workers : static_cast<int64_t>(std::thread::hardware_concurrency());
  const int64_t workers = std::max<int64_t>(1, std::min<int64_t>(cores, n / min_chunk));
  if (workers == 1) {
    fn(0, n, 0);
    return;
  }
  std::vector<std::thread> pool;
  const int64_t step = (n + workers - 1) / workers;
  for (int64_t k = 0; k < workers; ++k)
    pool.emplace_back([=] { fn(k * step, std::min(n, (k + 1) * step), static_cast<size_t>(k)); });
  for (auto& t : pool) t.join();
}

}  // namespace fusekit
