// A row-reduction config (schedules/row_reduction_template.h) read once into
// the typed schedule the row printer prints, refused where
// RowReductionTemplate::can_implement (the rule the space requires too) says
// the op cannot take it.
#pragma once

#include <cstdint>
#include <vector>

#include "generator/candidates/fusion_candidate.h"
#include "generator/candidates/op_traits.h"
#include "schedules/param_space.h"

namespace fusekit {

// The NVRTC row schedule. Absent parameters read as the kernels that
// records from before them measured (see the template's header).
struct RowSchedule {
  int threads = 0;   // threads per row
  int rows = 0;      // rows per block
  int vec = 0;       // elements per access
  int cache = 0;     // vectors per thread held between passes; 0 re-reads the row
  int split = 1;     // blocks (a cluster) sharing a row
  // keep=0: the outputs evaluate reduction bodies again instead of holding
  // them per element; keep=2: kept bodies also feed the later reductions of
  // the cached path (add_layernorm's variance reads the kept x + residual).
  bool keep_bodies = true;
  bool feed_later = false;
  // smem=1 with cache > 0: the cached row lives in shared memory; a thread
  // reads back only its own slots, so no barrier guards them.
  bool staged = false;
  int unroll = 1;    // vectors of each full input a re-reading pass loads ahead
  // persist=P: P blocks per SM, each looping over row groups, the next
  // group's staged row in flight (cp.async, double-buffered).
  int persist = 0;
  // onepass=1: the reduction pairs one combine finishes (empty otherwise).
  std::vector<ReductionPair> pairs;
  bool wbatch = false;  // the cached output pass loads every weight vector ahead
  // hint=1: L2 eviction policies on row loads; hint=2: also L1, and a row
  // read once is kept, because a held row dropped first from L2 costs more
  // than it saves (docs/architecture.md, "Decisions and findings").
  int hint = 0;
  int min_blocks = 0;       // minb: registers capped so that this many blocks fit on an SM
  int64_t fixed_cols = 0;   // len: compiled for rows of exactly this many columns; 0 generic
  bool words = false;       // a cached 16-bit row stays packed, two elements per register

  // The pair whose first reduction is `k`, or null.
  const ReductionPair* pair_at(size_t k) const;
  // Whether reduction `k` is the second of a pair.
  bool pair_second(size_t k) const { return k > 0 && pair_at(k - 1) != nullptr; }
  // The policy a row read once is loaded with.
  const char* read_once() const { return hint == 2 ? "fk_keep" : "fk_stream"; }
};

// `config` as a RowSchedule for `candidate`; UserError naming the schedule
// and the fix where the op cannot take it (can_implement, load_hint, len).
RowSchedule parse_row_schedule(const FusionCandidate& candidate, const Pipeline& pipeline, const Config& config);

}  // namespace fusekit
