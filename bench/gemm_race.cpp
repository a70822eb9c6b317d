// Races each model FFN GEMM's points (cuBLASLt fused epilogues, plain GEMM
// plus a fusekit tail, the heuristic's top-k algorithms and the algorithm
// space beyond them) on device 0 and writes, per case, cuBLASLt's first
// heuristic answer and the fastest heuristic answer beside fusekit's
// winner as one JSON line;
// bench/gemm_peers.py times PyTorch on the same cases and joins them.
//
//   gemm_race --out race.jsonl [--records records.jsonl] [--dtypes f16,bf16] [--cases bert_up,...]
//             [--space N]   (algorithm-space configurations timed per plan; 0: the heuristic's only)
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/errors.h"
#include "generator/cublaslt/gemm_racer.h"
#include "generator/halide/halide_backend.h"
#include "generator/nvrtc/nvrtc_compiler.h"

namespace fusekit {
namespace {

struct Case {
  const char* name;
  const char* epilogue;
  int64_t n, k;
};

// BERT-base FFN (erf-GELU up, bias + residual down), GPT-2's tanh-GELU up,
// Llama-7B's gate/up with SiLU-multiply; weights as nn.Linear stores them.
constexpr Case kCases[] = {
    {"bert_up", "out = gelu(acc + b[col])", 3072, 768},
    {"bert_down", "out = acc + b[col] + r", 768, 3072},
    {"gpt2_up", "out = gelu_tanh(acc + b[col])", 3072, 768},
    {"llama_gate_up", "out = silu(acc) * acc2", 11008, 4096},
};
constexpr int64_t kTokens[] = {128, 8192};

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string part; std::getline(in, part, ',');)
    if (!part.empty()) out.push_back(part);
  return out;
}

nlohmann::json point_json(const GemmRace& race, int i) {
  if (i < 0) return nullptr;
  const MeasureResult& r = race.results[i];
  return {{"backend", gemm_point_backend(race.points[i])}, {"params", gemm_point_params(race.points[i])},
          {"rank", race.points[i].rank}, {"median_us", r.median_us}, {"p20_us", r.p20_us}, {"p80_us", r.p80_us}};
}

// At most 999: the walk's ranks (1000 + j) stay the four digits records parse.
int parse_count(const std::string& option, const std::string& text) {
  if (text.empty() || text.size() > 3 || text.find_first_not_of("0123456789") != std::string::npos)
    throw UserError(option + " '" + text + "' is not a count from 0 to 999");
  return std::stoi(text);
}

// What the algorithm-space walk of each plan found and timed.
nlohmann::json space_json(const GemmRace& race) {
  nlohmann::json out;
  const char* names[] = {"fused", "tail"};
  for (int t = 0; t < 2; ++t)
    out[names[t]] = {{"ids", race.space[t].ids},
                     {"built", race.space[t].built},
                     {"accepted", race.space[t].accepted},
                     {"timed", race.space_timed[t]},
                     {"notes", race.space[t].notes}};
  return out;
}

int run(int argc, char** argv) {
  std::string out_path, records_path, dtypes = "f16,bf16", cases;
  GemmRaceOptions options;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--out") out_path = argv[i + 1];
    else if (a == "--records") records_path = argv[i + 1];
    else if (a == "--dtypes") dtypes = argv[i + 1];
    else if (a == "--cases") cases = argv[i + 1];
    else if (a == "--space") options.space_points = parse_count(a, argv[i + 1]);
    else throw UserError("unknown option '" + a + "'; known: --out --records --dtypes --cases --space");
  }
  if (out_path.empty()) throw UserError("--out FILE is required");
  std::ofstream out(out_path), records;
  if (!records_path.empty()) records.open(records_path);
  const std::vector<std::string> wanted = split(cases);
  Provenance prov;
  // The whole toolchain, so `fusekit build` finds these records matching its own.
  prov.cuda_version = nvrtc_version();
  prov.halide_version = halide_version();
  prov.fusekit_version = FUSEKIT_VERSION;
  for (const Case& c : kCases) {
    if (!wanted.empty() && std::find(wanted.begin(), wanted.end(), c.name) == wanted.end()) continue;
    for (const std::string& dt_text : split(dtypes)) {
      auto dt = parse_dtype(dt_text);
      if (!dt) throw UserError("unknown dtype '" + dt_text + "'; known: f32 f16 bf16");
      const GemmCandidate cand = make_gemm_candidate(c.epilogue, /*b_transposed=*/true, c.name);
      auto racer = make_gemm_racer(cand, *dt, options);
      for (int64_t m : kTokens) {
        const GemmDims dims{m, c.n, c.k};
        GemmRace race = racer->race(dims);
        size_t ok = 0;
        for (const auto& r : race.results) ok += r.status == RecordStatus::kOk;
        nlohmann::json line = {{"case", c.name},       {"epilogue", c.epilogue},
                               {"dtype", dt_text},     {"m", m},
                               {"n", c.n},             {"k", c.k},
                               {"gpu", racer->device().gpu_name},
                               {"fused_maps", racer->mapping().fused},
                               {"mapping_reason", racer->mapping().reason},
                               {"points", race.points.size()}, {"verified", ok},
                               {"heuristic_first", point_json(race, race.heuristic_first)},
                               {"best_heuristic", point_json(race, race.best_heuristic)},
                               {"space", space_json(race)},
                               {"winner", point_json(race, race.winner)}};
        out << line.dump() << "\n" << std::flush;
        std::cout << c.name << " " << dt_text << " M=" << m << ": " << ok << "/" << race.points.size()
                  << " verified; heuristic first "
                  << (race.heuristic_first >= 0 ? race.results[race.heuristic_first].median_us : -1)
                  << " us, best heuristic "
                  << (race.best_heuristic >= 0 ? race.results[race.best_heuristic].median_us : -1)
                  << " us, winner " << (race.winner >= 0 ? race.results[race.winner].median_us : -1) << " us ("
                  << (race.winner >= 0 ? gemm_point_backend(race.points[race.winner]) : "none") << " rank "
                  << (race.winner >= 0 ? race.points[race.winner].rank : -1) << "); space: fused "
                  << race.space[0].accepted << "/" << race.space[0].built << " accepted, " << race.space_timed[0]
                  << " timed; tail " << race.space[1].accepted << "/" << race.space[1].built << ", "
                  << race.space_timed[1] << std::endl;
        for (size_t i = 0; i < race.results.size(); ++i)
          if (race.results[i].status != RecordStatus::kOk)
            std::cout << "  " << gemm_point_params(race.points[i]).substr(0, 60) << ": "
                      << record_status_name(race.results[i].status) << " " << race.results[i].error.substr(0, 300)
                      << std::endl;
        if (records.is_open())
          for (const TuningRecord& r :
               gemm_records(cand, *dt, dims, race.points, race.results, racer->device(), prov))
            records << nlohmann::json(r).dump() << "\n";
      }
    }
  }
  return 0;
}

}  // namespace
}  // namespace fusekit

int main(int argc, char** argv) {
  try {
    return fusekit::run(argc, argv);
  } catch (const fusekit::UserError& e) {
    std::cerr << "gemm_race: " << e.what() << "\n";
    return 2;
  }
}
