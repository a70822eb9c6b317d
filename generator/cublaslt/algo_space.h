// cuBLASLt's algorithm space beyond its heuristic: each algorithm id's
// capabilities (tiles, stages, split-K, reduction schemes, CTA swizzling,
// custom options) and the configurations built from them, as
// CUDALibrarySamples' LtSgemmCustomFind walks them. Two sources of
// configurations: the neighbours of the heuristic's answers (one attribute
// changed at a time) and a grid over every id, capped and spread over the
// ids. Pure logic: algo_search.h asks cuBLASLt for the capabilities and
// checks the configurations.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fusekit {

// What cublasLtMatmulAlgoCapGetAttribute says of one algorithm id.
struct AlgoCaps {
  int id = 0;
  std::vector<uint32_t> tiles;    // CUBLASLT_ALGO_CAP_TILE_IDS ({0} where it has none: the undefined tile)
  std::vector<uint32_t> stages;   // CUBLASLT_ALGO_CAP_STAGES_IDS ({0} likewise)
  bool split_k = false;           // CUBLASLT_ALGO_CAP_SPLITK_SUPPORT
  uint32_t reduction_mask = 0;    // CUBLASLT_ALGO_CAP_REDUCTION_SCHEME_MASK
  bool swizzle = false;           // CUBLASLT_ALGO_CAP_CTA_SWIZZLING_SUPPORT
  int custom_max = 0;             // CUBLASLT_ALGO_CAP_CUSTOM_OPTION_MAX
};

// One configuration: the CUBLASLT_ALGO_CONFIG_* attributes of an algorithm.
struct AlgoConfig {
  int id = 0;
  uint32_t tile = 0;
  uint32_t stages = 0;
  int split_k = 1;
  uint32_t reduction = 0;  // CUBLASLT_REDUCTION_SCHEME_*; 0 (none) unless split_k > 1
  uint32_t swizzle = 0;
  uint32_t custom = 0;
  uint16_t cluster = 0;    // CUBLASLT_CLUSTER_SHAPE_* (0: auto)

  bool operator==(const AlgoConfig& o) const;
  bool operator<(const AlgoConfig& o) const;
};

// "id=23 tile=18 stages=22 splitk=1 red=0 swz=0 custom=0 cluster=0".
std::string algo_config_text(const AlgoConfig& config);

struct AlgoSpaceOptions {
  std::vector<int> split_k = {1, 2, 3, 4, 6, 8};
  int min_k_per_split = 256;            // a split below this many K is not worth a reduction pass
  int max_custom = 3;                   // custom options tried: 0 .. min(cap, this)
  std::vector<uint16_t> clusters = {0, 2, 3, 5, 6};  // auto, 1x1, 2x1, 1x2, 2x2 (Hopper's thread-block clusters)
  size_t max_grid = 6000;               // grid configurations handed to cublasLtMatmulAlgoCheck
};

// The split-K factors of `options` usable for K: 1, and those leaving at
// least min_k_per_split of K per split.
std::vector<int> split_k_factors(int64_t k, const AlgoSpaceOptions& options);

// `seed` with one attribute changed to each other value `caps` allows
// (tile, stages, split-K with each reduction scheme of the mask, swizzle,
// custom option, cluster shape). Excludes the seed itself.
std::vector<AlgoConfig> algo_neighbours(const AlgoConfig& seed, const AlgoCaps& caps, int64_t k,
                                        const AlgoSpaceOptions& options);

// Every id's tiles x stages x split-K (x reduction) x swizzle x custom
// option x cluster, at most options.max_grid in all: each id gets an equal
// share, picked evenly through its list (tiles outermost), so a cap leaves
// every id and its tiles represented; the ids are interleaved.
std::vector<AlgoConfig> algo_grid(const std::vector<AlgoCaps>& caps, int64_t k, const AlgoSpaceOptions& options);

// A configuration that passed cublasLtMatmulAlgoCheck, with what the check
// said.
struct CheckedAlgo {
  AlgoConfig config;
  bool neighbour = false;  // from algo_neighbours (ranked before grid configurations)
  float waves = 0;         // cuBLASLt's wavesCount
  size_t workspace_bytes = 0;
};

// How well a launch of `waves` fills the GPU: the fraction of the last
// wave's SMs in use over the whole launch (1 for whole waves; a launch of
// under one wave is its own fraction).
double wave_efficiency(float waves);

// At most `budget` of `checked` to time: neighbours first, then by wave
// efficiency, one per (id, tile, stages) in a first pass and the rest
// after, so the timed set spans the tiles before it spans the knobs.
std::vector<CheckedAlgo> select_for_timing(std::vector<CheckedAlgo> checked, size_t budget);

}  // namespace fusekit
