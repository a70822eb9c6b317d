// Map: capabilities() reads one id's caps, config_of() a heuristic
// answer's configuration, algo_of() builds the blob of a configuration;
// search_algo_space() puts neighbours and grid through the check.
#include "generator/cublaslt/algo_search.h"

#include <map>
#include <set>

namespace fusekit {
namespace {

template <typename T>
bool cap(const CublasLt& lt, const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoCapAttributes_t attr, T* value) {
  size_t written = 0;
  return lt.cublasLtMatmulAlgoCapGetAttribute(&algo, attr, value, sizeof *value, &written) == CUBLAS_STATUS_SUCCESS;
}

std::vector<uint32_t> cap_list(const CublasLt& lt, const cublasLtMatmulAlgo_t& algo,
                               cublasLtMatmulAlgoCapAttributes_t attr) {
  size_t bytes = 0;
  if (lt.cublasLtMatmulAlgoCapGetAttribute(&algo, attr, nullptr, 0, &bytes) != CUBLAS_STATUS_SUCCESS || bytes == 0)
    return {};
  std::vector<uint32_t> ids(bytes / sizeof(uint32_t));
  size_t written = 0;
  if (lt.cublasLtMatmulAlgoCapGetAttribute(&algo, attr, ids.data(), bytes, &written) != CUBLAS_STATUS_SUCCESS)
    return {};
  ids.resize(written / sizeof(uint32_t));
  return ids;
}

template <typename T>
bool get_config(const CublasLt& lt, const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t attr,
                T* value) {
  size_t written = 0;
  return lt.cublasLtMatmulAlgoConfigGetAttribute(&algo, attr, value, sizeof *value, &written) == CUBLAS_STATUS_SUCCESS;
}

template <typename T>
bool set_config(const CublasLt& lt, cublasLtMatmulAlgo_t* algo, cublasLtMatmulAlgoConfigAttributes_t attr, T value) {
  return lt.cublasLtMatmulAlgoConfigSetAttribute(algo, attr, &value, sizeof value) == CUBLAS_STATUS_SUCCESS;
}

struct Context {
  const CublasLt& lt;
  cublasLtHandle_t handle;
  cudaDataType_t type;
};

bool init(const Context& c, int id, cublasLtMatmulAlgo_t* algo) {
  return c.lt.cublasLtMatmulAlgoInit(c.handle, CUBLAS_COMPUTE_32F, CUDA_R_32F, c.type, c.type, c.type, c.type, id,
                                     algo) == CUBLAS_STATUS_SUCCESS;
}

// The id's capabilities; false where it cannot be initialized or lacks the epilogue.
bool capabilities(const Context& c, int id, GemmEpilogue epilogue, AlgoCaps* out) {
  cublasLtMatmulAlgo_t algo;
  if (!init(c, id, &algo)) return false;
  uint32_t epilogues = 0;
  const uint32_t want = static_cast<uint32_t>(epilogue);
  if (cap(c.lt, algo, CUBLASLT_ALGO_CAP_EPILOGUE_MASK, &epilogues) && (epilogues & want) != want) return false;
  int32_t split = 0, custom = 0;
  uint32_t swizzle = 0;
  out->id = id;
  out->tiles = cap_list(c.lt, algo, CUBLASLT_ALGO_CAP_TILE_IDS);
  out->stages = cap_list(c.lt, algo, CUBLASLT_ALGO_CAP_STAGES_IDS);
  out->split_k = cap(c.lt, algo, CUBLASLT_ALGO_CAP_SPLITK_SUPPORT, &split) && split != 0;
  if (!cap(c.lt, algo, CUBLASLT_ALGO_CAP_REDUCTION_SCHEME_MASK, &out->reduction_mask)) out->reduction_mask = 0;
  out->swizzle = cap(c.lt, algo, CUBLASLT_ALGO_CAP_CTA_SWIZZLING_SUPPORT, &swizzle) && swizzle != 0;
  out->custom_max = cap(c.lt, algo, CUBLASLT_ALGO_CAP_CUSTOM_OPTION_MAX, &custom) ? custom : 0;
  return true;
}

// A heuristic answer's configuration (attributes it cannot read stay at their defaults).
AlgoConfig config_of(const CublasLt& lt, const GemmAlgo& a) {
  const cublasLtMatmulAlgo_t algo = to_lt_algo(a);
  AlgoConfig c;
  int32_t id = 0, split = 1;
  get_config(lt, algo, CUBLASLT_ALGO_CONFIG_ID, &id);
  get_config(lt, algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &c.tile);
  get_config(lt, algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, &c.stages);
  get_config(lt, algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &split);
  get_config(lt, algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &c.reduction);
  get_config(lt, algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, &c.swizzle);
  get_config(lt, algo, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, &c.custom);
  get_config(lt, algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &c.cluster);
  c.id = id;
  c.split_k = split;
  return c;
}

// The blob of a configuration; false where cuBLASLt refuses an attribute.
bool algo_of(const Context& c, const AlgoConfig& cfg, GemmAlgo* out) {
  cublasLtMatmulAlgo_t algo;
  if (!init(c, cfg.id, &algo)) return false;
  const int32_t split = cfg.split_k;
  bool ok = set_config(c.lt, &algo, CUBLASLT_ALGO_CONFIG_TILE_ID, cfg.tile) &&
            set_config(c.lt, &algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, cfg.stages) &&
            set_config(c.lt, &algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, split) &&
            set_config(c.lt, &algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, cfg.reduction) &&
            set_config(c.lt, &algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, cfg.swizzle) &&
            set_config(c.lt, &algo, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, cfg.custom);
  // Clusters are Hopper's; a release without the attribute takes only auto.
  if (ok && cfg.cluster != 0) ok = set_config(c.lt, &algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, cfg.cluster);
  if (ok) *out = from_lt_algo(algo);
  return ok;
}

std::vector<int> algorithm_ids(const Context& c, AlgoSearchStats* stats) {
  std::vector<int> ids(256);
  int n = 0;
  const cublasStatus_t st = c.lt.cublasLtMatmulAlgoGetIds(c.handle, CUBLAS_COMPUTE_32F, CUDA_R_32F, c.type, c.type,
                                                          c.type, c.type, static_cast<int>(ids.size()), ids.data(), &n);
  if (st != CUBLAS_STATUS_SUCCESS) {
    stats->notes += std::string("cublasLtMatmulAlgoGetIds: ") + cublas_status_name(st) + "\n";
    n = 0;
  }
  ids.resize(static_cast<size_t>(n));
  return ids;
}

}  // namespace

std::vector<GemmHeuristic> search_algo_space(const CublasLt& lt, GemmSessions& sessions, const GemmShape& shape,
                                             const GemmPlan& plan, uint64_t bias, size_t workspace_bytes,
                                             CUstream stream, const std::vector<GemmHeuristic>& seeds,
                                             const AlgoSpaceOptions& options, size_t budget, AlgoSearchStats* stats) {
  Context c{lt, nullptr, gemm_data_type(shape.dtype)};
  Status st = sessions.handle(stream, &c.handle);
  if (!st.ok()) {
    stats->notes += "algorithm space: " + st.message() + "\n";
    return {};
  }
  std::map<int, AlgoCaps> caps;
  for (int id : algorithm_ids(c, stats)) {
    AlgoCaps a;
    if (capabilities(c, id, plan.epilogue, &a)) caps[id] = a;
  }
  stats->ids = static_cast<int>(caps.size());
  std::set<AlgoConfig> known;  // the heuristic's answers and what is already built
  std::vector<std::pair<AlgoConfig, bool>> configs;  // (configuration, neighbour)
  for (const GemmHeuristic& s : seeds) known.insert(config_of(lt, s.algo));
  for (const AlgoConfig& seed : std::set<AlgoConfig>(known)) {
    auto it = caps.find(seed.id);
    if (it == caps.end()) continue;
    for (const AlgoConfig& n : algo_neighbours(seed, it->second, shape.k, options))
      if (known.insert(n).second) configs.push_back({n, true});
  }
  std::vector<AlgoCaps> all;
  for (const auto& [id, a] : caps) all.push_back(a);
  for (const AlgoConfig& g : algo_grid(all, shape.k, options))
    if (known.insert(g).second) configs.push_back({g, false});
  std::vector<CheckedAlgo> checked;
  std::map<AlgoConfig, GemmHeuristic> blobs;
  for (const auto& [cfg, neighbour] : configs) {
    GemmHeuristic h;
    if (!algo_of(c, cfg, &h.algo)) continue;
    ++stats->built;
    if (!sessions.check(shape, plan, bias, h.algo, stream, &h).ok() || h.workspace_bytes > workspace_bytes) continue;
    checked.push_back({cfg, neighbour, h.waves, h.workspace_bytes});
    blobs[cfg] = h;
  }
  stats->accepted = checked.size();
  std::vector<GemmHeuristic> out;
  for (const CheckedAlgo& pick : select_for_timing(checked, budget)) out.push_back(blobs[pick.config]);
  return out;
}

}  // namespace fusekit
