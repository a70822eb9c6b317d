// region_eval REQUEST.json: evaluates an expression with fusekit's CPU
// reference (the candidate's Halide pipeline JIT-compiled for the host) on
// inputs read from raw f32 files, and writes its outputs the same way. The
// ONNX Runtime oracle test (ort_oracle_test.py) drives it.
//
//   {"expr": "out = ...", "cases": [                       one JIT, many evaluations
//     {"shape": [2, 16, 768],                              iteration shape, outermost first
//      "inputs": {"in0": "a.bin"}, "outputs": {"out": "o.bin"}}]}
#include <cstdio>
#include <fstream>
#include <iostream>

#include <nlohmann/json.hpp>

#include "common/errors.h"
#include "generator/candidate_workload.h"
#include "generator/candidates/expr_parser.h"

namespace {

std::vector<int64_t> domain_of(const fusekit::FusionCandidate& c, const std::vector<int64_t>& shape) {
  int64_t all = 1;
  for (int64_t d : shape) all *= d;
  switch (c.layout) {
    case fusekit::Layout::kFlat: return {all};
    case fusekit::Layout::kNchw: return {shape.at(2) * shape.at(3), shape.at(1), shape.at(0)};
    case fusekit::Layout::kNd:
    case fusekit::Layout::kNdRows: return c.domain_for_shape(shape);
    default: return {shape.back(), all / shape.back()};
  }
}

void evaluate(const fusekit::FusionCandidate& c, const fusekit::Workload& wl, const nlohmann::json& req);

int run(const std::string& request_path) {
  std::ifstream rf(request_path);
  const nlohmann::json req = nlohmann::json::parse(rf);
  fusekit::FusionCandidate c = fusekit::parse_expression(req.at("expr").get<std::string>());
  auto wl = fusekit::make_candidate_workload(c, fusekit::DType::kF32);
  for (const auto& one : req.at("cases")) evaluate(c, *wl, one);
  return 0;
}

void evaluate(const fusekit::FusionCandidate& c, const fusekit::Workload& wl0, const nlohmann::json& req) {
  const fusekit::Workload* wl = &wl0;
  const fusekit::Problem p = wl->problem(domain_of(c, req.at("shape").get<std::vector<int64_t>>()));
  std::vector<fusekit::HostTensor> inputs;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    fusekit::HostTensor t = fusekit::HostTensor::make(fusekit::DType::kF32, p.input_dims[i]);
    const std::string file = req.at("inputs").at(c.inputs[i].name);
    std::ifstream f(file, std::ios::binary);
    f.read(reinterpret_cast<char*>(t.bytes.data()), static_cast<std::streamsize>(t.bytes.size()));
    if (f.gcount() != static_cast<std::streamsize>(t.bytes.size()) || f.peek() != EOF)
      throw fusekit::UserError(file + ": expected " + std::to_string(t.elements()) + " f32 values for " + c.inputs[i].name);
    inputs.push_back(std::move(t));
  }
  std::vector<fusekit::HostTensor> outputs;
  wl->reference(p, inputs, &outputs);
  for (size_t o = 0; o < c.outputs.size(); ++o) {
    std::ofstream f(req.at("outputs").at(c.outputs[o]).get<std::string>(), std::ios::binary);
    f.write(reinterpret_cast<const char*>(outputs[o].bytes.data()), static_cast<std::streamsize>(outputs[o].bytes.size()));
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: region_eval REQUEST.json\n");
    return 2;
  }
  try {
    return run(argv[1]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "region_eval: %s\n", e.what());
    return 2;
  }
}
