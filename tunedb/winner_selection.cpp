// Winner ranking shared by every store (see winner_selection.h).
#include "tunedb/winner_selection.h"

#include <map>
#include <tuple>

namespace fusekit {
namespace {

// Each field where a record's origin differs from the target, as text.
std::vector<std::string> mismatches(const TuningRecord& r, const RecordOrigin& target) {
  const RecordOrigin o = origin_of(r);
  std::vector<std::string> out;
  auto check = [&](const char* what, const std::string& got, const std::string& want) {
    if (!want.empty() && got != want)
      out.push_back(std::string(what) + " " + (got.empty() ? "unknown" : got) + " (not " + want + ")");
  };
  if (r.status != RecordStatus::kModeled) {
    check("GPU", o.gpu_name, target.gpu_name);
    if (target.sm_count > 0 && o.sm_count != target.sm_count)
      out.push_back(std::to_string(o.sm_count) + " SMs (not " + std::to_string(target.sm_count) + ")");
    check("driver", o.driver_major, target.driver_major);
  }
  check("CUDA", o.cuda_version, target.cuda_version);
  check("Halide", o.halide_version, target.halide_version);
  check("fusekit", o.fusekit_version, target.fusekit_version);
  if (uses_cublas(r)) check("cuBLASLt", o.cublas_version, target.cublas_version);
  return out;
}

std::string join(const std::vector<std::string>& parts) {
  std::string s;
  for (const auto& p : parts) s += (s.empty() ? "" : ", ") + p;
  return s;
}

// The origin's identity, so records of one origin rank together.
std::string origin_key(const TuningRecord& r) {
  const RecordOrigin o = origin_of(r);
  return o.gpu_name + '\n' + std::to_string(o.sm_count) + '\n' + o.driver_major + '\n' + o.cuda_version + '\n' +
         o.halide_version + '\n' + o.fusekit_version + '\n' + o.cublas_version;
}

// The digits after `tag` in `text` ("130100" of "... cublaslt=130100 ..."), "" when absent.
std::string number_after(const std::string& text, const std::string& tag) {
  const size_t at = text.find(tag);
  if (at == std::string::npos) return "";
  const size_t from = at + tag.size();
  const size_t end = text.find_first_not_of("0123456789", from);
  return text.substr(from, end == std::string::npos ? std::string::npos : end - from);
}

std::string schedule_name(const TuningRecord& r) { return r.backend + '\n' + r.shape + '\n' + r.params; }

// The median ranking over one pool of measured records (rows fastest first).
const TuningRecord* rank_by_median(const std::vector<const TuningRecord*>& pool, Selection* sel) {
  // Each schedule's newest kernel: its records of another kernel (an older
  // printer's) are left out; those of an unknown one ("") stay.
  std::map<std::string, const TuningRecord*> newest;
  for (const TuningRecord* r : pool) {
    if (r->kernel_hash.empty()) continue;
    const TuningRecord*& n = newest[schedule_name(*r)];
    if (!n || r->timestamp > n->timestamp) n = r;
  }
  std::map<std::string, std::vector<const TuningRecord*>> schedules;
  for (const TuningRecord* r : pool) {
    const auto it = newest.find(schedule_name(*r));
    if (r->kernel_hash.empty() || it == newest.end() || r->kernel_hash == it->second->kernel_hash) {
      schedules[schedule_name(*r)].push_back(r);
      sel->used.push_back(*r);
    } else {
      sel->passed_over.push_back({*r, "an older kernel (" + r->kernel_hash + ") of a schedule rebuilt as " +
                                          it->second->kernel_hash});
    }
  }
  const TuningRecord* best = nullptr;
  size_t best_count = 0;
  for (const auto& [name, records] : schedules) {
    const TuningRecord* median = records[(records.size() - 1) / 2];
    // Ties go to the schedule measured more often, then to the older
    // record (earlier in the rows: by timestamp, then insertion).
    if (!best || median->median_us < best->median_us ||
        (median->median_us == best->median_us &&
         (records.size() > best_count || (records.size() == best_count && median < best)))) {
      best = median;
      best_count = records.size();
    }
  }
  return best;
}

// A schedule's kernel as a revocation names it: backend, params and kernel
// (every shape of the bucket: a kernel that failed at one shape is wrong).
std::string revoked_kernel(const TuningRecord& r) { return r.backend + '\n' + r.params + '\n' + r.kernel_hash; }

// Rows without the revocations and the measured records they revoke (those
// of the same kernel, or of an unknown one, on the same GPU, no newer than
// the revocation), which go to `passed_over` with the reason.
std::vector<TuningRecord> drop_revoked(const std::vector<TuningRecord>& rows, Selection* sel) {
  std::map<std::string, const TuningRecord*> revoked;  // gpu + kernel -> newest revocation
  for (const TuningRecord& r : rows) {
    if (r.status != RecordStatus::kRevoked) continue;
    const TuningRecord*& newest = revoked[r.gpu_name + '\n' + revoked_kernel(r)];
    if (!newest || r.timestamp > newest->timestamp) newest = &r;
  }
  std::vector<TuningRecord> kept;
  for (const TuningRecord& r : rows) {
    if (r.status == RecordStatus::kRevoked) {
      sel->passed_over.push_back({r, "revoked: " + r.error});
      continue;
    }
    const TuningRecord* by = nullptr;
    for (const auto& [key, rev] : revoked) {
      const bool same_kernel = r.kernel_hash.empty() || r.kernel_hash == rev->kernel_hash;
      if (r.status == RecordStatus::kOk && same_kernel && r.gpu_name == rev->gpu_name && r.backend == rev->backend &&
          r.params == rev->params && r.timestamp <= rev->timestamp)
        by = rev;
    }
    if (by) sel->passed_over.push_back({r, "failed `fusekit verify --db` on " + by->gpu_name + " at " + by->timestamp});
    else kept.push_back(r);
  }
  return kept;
}

}  // namespace

std::string driver_major(const std::string& driver_version) {
  return driver_version.substr(0, driver_version.find('.'));
}

bool uses_cublas(const TuningRecord& r) { return r.backend.rfind("cublaslt", 0) == 0; }

RecordOrigin origin_of(const TuningRecord& r) {
  RecordOrigin o{r.gpu_name, r.sm_count, driver_major(r.driver_version), r.cuda_version, r.halide_version,
                 r.fusekit_version, ""};
  // GEMM records join the cuBLASLt version to the toolkit's (gemm_records).
  static const std::string kTag = " cublasLt ";
  const size_t at = r.cuda_version.find(kTag);
  if (at != std::string::npos) {
    o.cuda_version = r.cuda_version.substr(0, at);
    o.cublas_version = number_after(r.cuda_version, kTag);
  }
  if (o.cublas_version.empty() && uses_cublas(r)) o.cublas_version = number_after(r.params, "cublaslt=");
  return o;
}

std::string staleness(const TuningRecord& r, const RecordOrigin& target) { return join(mismatches(r, target)); }

Selection select_winner(const std::vector<TuningRecord>& all_rows, const RecordOrigin& target) {
  Selection sel;
  const std::vector<TuningRecord> rows = drop_revoked(all_rows, &sel);
  if (rows.empty()) return sel;
  // The status tier: measured where any was, else modeled.
  const RecordStatus tier = rows.front().status == RecordStatus::kOk ? RecordStatus::kOk : RecordStatus::kModeled;
  std::vector<const TuningRecord*> fresh;
  // Stale records by origin: (fields off, -newest timestamp order) decides the closest.
  std::map<std::string, std::vector<const TuningRecord*>> stale;
  for (const TuningRecord& r : rows) {
    if (r.status != tier) {
      sel.passed_over.push_back({r, std::string(record_status_name(r.status)) + "; measured records rank first"});
      continue;
    }
    (mismatches(r, target).empty() ? fresh : stale[origin_key(r)]).push_back(&r);
  }
  std::vector<const TuningRecord*> pool = fresh;
  std::string chosen;
  if (pool.empty()) {
    using Rank = std::tuple<size_t, std::string, std::string>;  // fields off, newest (inverted), origin
    std::optional<Rank> best_rank;
    for (const auto& [key, records] : stale) {
      std::string newest;
      for (const TuningRecord* r : records) newest = std::max(newest, r->timestamp);
      std::string inverted = newest;
      for (char& c : inverted) c = static_cast<char>(0x7f - c);
      const Rank rank{mismatches(*records.front(), target).size(), inverted, key};
      if (!best_rank || rank < *best_rank) {
        best_rank = rank;
        chosen = key;
      }
    }
    pool = stale[chosen];
  }
  for (const auto& [key, records] : stale) {
    if (key == chosen) continue;
    for (const TuningRecord* r : records)
      sel.passed_over.push_back({*r, "stale: " + staleness(*r, target) +
                                         (fresh.empty() ? "; records of a closer origin rank first" : "")});
  }
  if (tier != RecordStatus::kOk) {
    // Modeled records rank by the estimate alone; rows come fastest first.
    sel.best = *pool.front();
    for (const TuningRecord* r : pool) sel.used.push_back(*r);
    return sel;
  }
  sel.best = *rank_by_median(pool, &sel);
  return sel;
}

}  // namespace fusekit
