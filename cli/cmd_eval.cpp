#include "cli/cmd_eval.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/errors.h"
#include "generator/candidate_workload.h"

namespace fusekit {

po::options_description cmd_eval_options() {
  po::options_description o("eval options (developer: the CPU reference on seeded inputs)");
  add_selection_options(o);
  add_dtype_option(o);
  o.add_options()
      ("sizes", po::value<std::vector<std::string>>()->multitoken(), "one element count or shape (required)")
      ("seed", po::value<int>()->default_value(1), "input seed")
      ("out", po::value<std::string>(), "folder for meta.json and the raw f32 files (required)");
  return o;
}

namespace {

void write_f32(const std::filesystem::path& path, const HostTensor& t) {
  std::vector<float> v(static_cast<size_t>(t.elements()));
  for (int64_t i = 0; i < t.elements(); ++i) v[static_cast<size_t>(i)] = t.get(i);
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(float)));
  if (!f) throw UserError("cannot write '" + path.string() + "'");
}

}  // namespace

int cmd_eval(const po::variables_map& vm, const std::vector<std::string>& args) {
  if (!args.empty()) throw UserError("eval takes no positional arguments, got '" + args[0] + "'");
  const auto cands = selected_candidates(vm);
  if (cands.size() != 1) throw UserError("eval runs one op: give one --pattern or --expr");
  const DType dt = parse_dtypes(vm["dtype"].as<std::vector<std::string>>()).front();
  if (!vm.count("sizes") || !vm.count("out")) throw UserError("eval needs --sizes SIZE and --out DIR");
  const auto sizes = parse_sizes(vm["sizes"].as<std::vector<std::string>>());
  if (sizes.size() != 1) throw UserError("eval takes one size");
  const FusionCandidate& cand = cands[0];
  const std::vector<int64_t> domain = domain_for(cand, sizes[0]);
  const std::filesystem::path out = vm["out"].as<std::string>();
  auto wl = make_candidate_workload(cand, dt);
  const Problem p = wl->problem(domain);
  std::vector<HostTensor> in;
  for (size_t i = 0; i < p.input_dims.size(); ++i) {
    in.push_back(HostTensor::make(dt, p.input_dims[i]));
    wl->fill_input(i, static_cast<uint64_t>(vm["seed"].as<int>()) + i, &in.back());
  }
  std::vector<HostTensor> ref;
  wl->reference(p, in, &ref);
  std::filesystem::create_directories(out);
  nlohmann::json meta;
  meta["domain"] = std::vector<int64_t>(domain.rbegin(), domain.rend());  // numpy order
  meta["dtype"] = dtype_name(dt);
  for (size_t i = 0; i < in.size(); ++i) {
    // The input's shape broadcast to the domain's rank (numpy order).
    std::vector<int64_t> shape(domain.size(), 1);
    const auto& axes = cand.inputs[i].axes;
    for (size_t k = 0; k < domain.size(); ++k)
      if (axes.empty() || std::find(axes.begin(), axes.end(), static_cast<int>(k)) != axes.end())
        shape[domain.size() - 1 - k] = domain[k];
    // A permuted input (general layouts): its own storage shape.
    if (cand.inputs[i].permuted()) shape.assign(in[i].dims.rbegin(), in[i].dims.rend());
    write_f32(out / ("in_" + std::to_string(i) + ".f32"), in[i]);
    meta["inputs"].push_back({{"name", cand.inputs[i].name}, {"shape", shape}, {"file", "in_" + std::to_string(i) + ".f32"}});
  }
  for (const auto& prm : cand.params) meta["params"][prm.name] = prm.value;
  if (cand.params.empty()) meta["params"] = nlohmann::json::object();
  for (size_t o = 0; o < ref.size(); ++o) {
    write_f32(out / ("out_" + std::to_string(o) + ".f32"), ref[o]);
    meta["outputs"].push_back({{"name", cand.outputs[o]},
                               {"file", "out_" + std::to_string(o) + ".f32"},
                               {"shape", std::vector<int64_t>(ref[o].dims.rbegin(), ref[o].dims.rend())}});
  }
  std::ofstream(out / "meta.json") << meta.dump(1) << "\n";
  return 0;
}

}  // namespace fusekit
