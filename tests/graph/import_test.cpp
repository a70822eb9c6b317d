// ONNX import of the committed exports (real exporters), the graph JSON
// reader, the plan reader's checks, and `fusekit plan` on bad input.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "common/errors.h"
#include "generator/candidates/expr_parser.h"
#include "graph/canonicalize.h"
#include "graph/graph_json.h"
#include "graph/onnx_import.h"
#include "graph/plan.h"
#include "tests/cli/run_command.h"
#include "tests/support/temp_dir.h"

namespace fusekit::graph {
namespace {

const std::string kModels = FUSEKIT_MODELS_DIR;

Plan plan_model(const std::string& file, const std::map<std::string, std::vector<int64_t>>& dims) {
  Graph g = import_onnx(kModels + "/" + file);
  canonicalize(g);
  return make_plan(g, file, dims);
}

bool has_entry_with(const Plan& p, const std::string& text) {
  for (const auto& e : p.entries)
    if (e.expr.find(text) != std::string::npos) return true;
  return false;
}

TEST(OnnxImport, BertHasItsGeluAndLayerNormRegions) {
  Plan p = plan_model("bert.onnx", {{"batch", {2}}, {"seq", {16}}});
  EXPECT_GT(p.nodes, 500u);
  EXPECT_TRUE(has_entry_with(p, "gelu(")) << coverage_report(p);
  EXPECT_TRUE(has_entry_with(p, "mean(")) << coverage_report(p);  // written-out layernorm (opset 14)
  for (const auto& e : p.entries) {
    if (e.expr.find("gelu(") == std::string::npos) continue;
    EXPECT_EQ(e.occurrences.size(), 12u);  // twelve layers, one kernel
  }
}

// ResNet-50's head from both exporters (TorchScript: GlobalAveragePool after
// the last bn + add + relu; dynamo: ReduceMean over [-1, -2] after add +
// relu) is one kernel on the general nchw layout: the pool and its prologue.
TEST(OnnxImport, ResNetGlobalAveragePoolIsAKernel) {
  for (const auto& [file, pool] : {std::pair<std::string, std::string>{"resnet50.onnx", "/m/avgpool/GlobalAveragePool"},
                                   {"resnet50_dynamo.onnx", "node_mean"}}) {
    Plan p = plan_model(file, {{"batch", {1, 32}}});
    EXPECT_TRUE(p.unsupported.empty()) << file << "\n" << coverage_report(p);
    const PlanEntry* gap = nullptr;
    for (const auto& e : p.entries)
      for (const auto& o : e.occurrences)
        if (std::find(o.nodes.begin(), o.nodes.end(), pool) != o.nodes.end()) gap = &e;
    ASSERT_NE(gap, nullptr) << file << "\n" << coverage_report(p);
    EXPECT_EQ(gap->layout, "nchw") << file;
    EXPECT_NE(gap->expr.find("out = mean(relu("), std::string::npos) << gap->expr;
    EXPECT_EQ(gap->expr.substr(gap->expr.size() - 5), ", hw)") << gap->expr;
    EXPECT_EQ(gap->sizes, (std::vector<std::string>{"1x2048x49", "32x2048x49"})) << file;
    ASSERT_EQ(gap->occurrences.size(), 1u);
    EXPECT_EQ(gap->occurrences[0].outputs.size(), 1u);
    EXPECT_TRUE(parse_expression(gap->expr).general) << gap->expr;
  }
}

TEST(OnnxImport, EveryCommittedModelImportsAndPlans) {
  size_t models = 0;
  for (const auto& f : std::filesystem::directory_iterator(kModels)) {
    if (f.path().extension() != ".onnx") continue;
    ++models;
    Graph g = import_onnx(f.path().string());
    canonicalize(g);
    Plan p = make_plan(g, f.path().string(), {});
    EXPECT_GT(p.regions, 0u) << f.path();
    EXPECT_EQ(p.nodes, g.nodes.size());
    size_t accounted = p.nodes_in_regions + p.boundaries.size();
    for (const auto& u : p.unsupported) accounted += u.nodes.size();
    EXPECT_EQ(accounted, p.nodes) << f.path() << ": every node is in a region, unsupported, or a boundary";
  }
  EXPECT_GE(models, 4u);
}

class BadInput : public testing::TempDirTest {
 protected:
  std::string write(const std::string& name, const std::string& bytes) {
    std::ofstream(dir_ / name, std::ios::binary) << bytes;
    return (dir_ / name).string();
  }
};

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

TEST_F(BadInput, NotOnnxTruncatedAndTooNewAreUserErrors) {
  const std::string text = write("notes.onnx", "this is not a model\n");
  EXPECT_NE(error_of([&] { import_onnx(text); }).find("not an ONNX model"), std::string::npos);
  std::ifstream f(kModels + "/bert.onnx", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(f)), {});
  const std::string cut = write("cut.onnx", bytes.substr(0, bytes.size() / 2));
  const std::string msg = error_of([&] { import_onnx(cut); });
  EXPECT_NE(msg.find("cut.onnx"), std::string::npos) << msg;
  const std::string newer = error_of([&] { import_onnx(std::string(FUSEKIT_SOURCE_DIR) + "/tests/data/onnx/opset21_relu.onnx"); });
  EXPECT_NE(newer.find("opset21_relu.onnx: opset 21 is newer than this fusekit's ONNX library knows (17)"), std::string::npos)
      << newer;
  const std::string graph_only = error_of([&] { import_onnx((dir_ / "missing.onnx").string()); });
  EXPECT_NE(graph_only.find("cannot read"), std::string::npos);
}

TEST_F(BadInput, PlanCommandNamesTheFileAndWritesNothing) {
  const std::string bin = FUSEKIT_BINARY;
  const std::string out = (dir_ / "plan.json").string();
  const std::string text = write("notes.onnx", "garbage");
  auto r = fusekit::testing::run_command(bin + " plan " + text + " --out " + out);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("notes.onnx: not an ONNX model"), std::string::npos) << r.out;
  r = fusekit::testing::run_command(bin + " plan " + kModels + "/bert.onnx --dim heads=12 --out " + out);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("no dim named 'heads'"), std::string::npos) << r.out;
  r = fusekit::testing::run_command(bin + " plan " + kModels + "/bert.onnx --dim batch=x --out " + out);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("malformed --dim 'batch=x'"), std::string::npos) << r.out;
  EXPECT_FALSE(std::filesystem::exists(out));
  r = fusekit::testing::run_command(bin + " plan " + kModels + "/bert.onnx --dim batch=1,8 --dim seq=128 --out " + out);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("distinct kernels"), std::string::npos);
  EXPECT_NO_THROW(read_plan_file(out));
}

TEST_F(BadInput, TuneAndBuildCheckThePlanAndNameTheirNeeds) {
  const std::string bin = FUSEKIT_BINARY;
  const std::string db = (dir_ / "t.db").string();
  const std::string nonsense = write("p.json", R"J({"format": "fusekit-plan", "version": 1, "entries": [{"name": "a",
      "expr": "out = x +", "dtype": "f32", "sizes": ["4096"]}]})J");
  auto r = fusekit::testing::run_command(bin + " tune --plan " + nonsense + " --arch sm_90 --model --db " + db);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("p.json: entry 0 ('a'): expression:1:"), std::string::npos) << r.out;
  EXPECT_FALSE(std::filesystem::exists(db));
  r = fusekit::testing::run_command(bin + " build --arch sm_90 --db " + db + " --out " + (dir_ / "pkg").string());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("build needs what to package: --plan plan.json"), std::string::npos) << r.out;
  r = fusekit::testing::run_command(bin + " build --arch sm_90 --expr 'out = x' --name 'bad name' --db " + db +
                                    " --out " + (dir_ / "pkg").string());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("--name 'bad name' is not a C identifier"), std::string::npos) << r.out;
  EXPECT_FALSE(std::filesystem::exists(dir_ / "pkg"));
}

// plan -> tune --plan (the analytic model; no GPU needed) -> again, which
// measures nothing -> build --plan, whose ops carry the entries' names.
TEST_F(BadInput, PlanTuneResumeAndBuildEndToEnd) {
  const std::string bin = FUSEKIT_BINARY;
  const std::string graph = write("tiny.json", R"J({"format": "fusekit-graph", "version": 1, "name": "tiny",
    "inputs": ["x", "b"], "outputs": ["y"],
    "tensors": {"x": {"dtype": "f32", "shape": ["batch", 1024]}, "b": {"dtype": "f32", "shape": [1024]},
                "h": {"dtype": "f32", "shape": ["batch", 1024]}, "y": {"dtype": "f32", "shape": ["batch", 1024]}},
    "nodes": [{"name": "add", "op": "Add", "inputs": ["x", "b"], "outputs": ["h"]},
              {"name": "act", "op": "Sigmoid", "inputs": ["h"], "outputs": ["y"]}]})J");
  const std::string plan = (dir_ / "plan.json").string(), db = (dir_ / "t.db").string();
  auto r = fusekit::testing::run_command(bin + " plan " + graph + " --dim batch=64 --out " + plan);
  ASSERT_EQ(r.code, 0) << r.out;
  const std::string tune = bin + " tune --plan " + plan + " --arch sm_90 --model --backend nvrtc --budget 1 --db " + db;
  r = fusekit::testing::run_command(tune);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("64x1024      nvrtc"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 sizes (0 already in"), std::string::npos) << r.out;
  r = fusekit::testing::run_command(tune);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("1 sizes (1 already in"), std::string::npos) << r.out;
  const std::string pkg = (dir_ / "pkg").string();
  r = fusekit::testing::run_command(bin + " build --plan " + plan + " --arch sm_90 --db " + db + " --out " + pkg);
  ASSERT_EQ(r.code, 0) << r.out;
  std::ifstream header(pkg + "/include/fusekit_kernels.h");
  std::string h((std::istreambuf_iterator<char>(header)), {});
  EXPECT_NE(h.find("fusekit_tiny_add_sigmoid_f32("), std::string::npos);
  std::ifstream manifest_file(pkg + "/share/fusekit_kernels/manifest.json");
  const auto manifest = nlohmann::json::parse(manifest_file);
  EXPECT_EQ(manifest["plan"]["entries"][0]["name"], "tiny_add_sigmoid");
  // `verify --package` rebuilds the reference of a plan entry from its expression.
  EXPECT_EQ(manifest["expressions"]["tiny_add_sigmoid"], manifest["plan"]["entries"][0]["expr"]);
}

TEST_F(BadInput, HandEditedPlansAreRejectedWithTheEntry) {
  auto plan_with = [&](const std::string& entry) {
    return write("p.json", R"J({"format": "fusekit-plan", "version": 1, "entries": [)J" + entry + "]}");
  };
  EXPECT_NE(error_of([&] { read_plan_file(write("x.json", "{nope")); }).find("not valid JSON"), std::string::npos);
  EXPECT_NE(error_of([&] { read_plan_file(write("x.json", "{}")); }).find("not a fusekit plan"), std::string::npos);
  const std::string bad_expr = error_of([&] {
    read_plan_file(plan_with(R"J({"name": "a", "expr": "out = frob(x)", "dtype": "f32", "sizes": ["4096"]})J"));
  });
  EXPECT_NE(bad_expr.find("entry 0 ('a'): expression:1:7: unknown function 'frob'"), std::string::npos) << bad_expr;
  EXPECT_NE(error_of([&] {
              read_plan_file(plan_with(R"J({"name": "a;rm", "expr": "out = x", "dtype": "f32", "sizes": []})J"));
            }).find("not a safe C identifier"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              read_plan_file(plan_with(R"J({"name": "a", "expr": "out = x + b[col]", "dtype": "f32", "sizes": ["2x3x4"]})J"));
            }).find("malformed size"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              read_plan_file(plan_with(R"J({"name": "a", "expr": "out = x", "dtype": "f64", "sizes": []})J"));
            }).find("unknown dtype 'f64'"),
            std::string::npos);
}

TEST_F(BadInput, GraphJsonIsReadAndCheckedOnTheSameRules) {
  const std::string ok = write("g.json", R"J({"format": "fusekit-graph", "version": 1, "name": "tiny", "opset": 17,
    "inputs": ["x", "b"], "outputs": ["y"],
    "tensors": {"x": {"dtype": "f32", "shape": ["batch", 3072]}, "b": {"dtype": "f32", "shape": [3072]},
                "h": {"dtype": "f32", "shape": ["batch", 3072]}, "y": {"dtype": "f32", "shape": ["batch", 3072]}},
    "constants": {},
    "nodes": [{"name": "add", "op": "Add", "inputs": ["x", "b"], "outputs": ["h"]},
              {"name": "gelu", "op": "Gelu", "inputs": ["h"], "outputs": ["y"], "attrs": {"approximate": "tanh"}}]})J");
  Graph g = read_graph_json(ok);
  canonicalize(g);
  Plan p = make_plan(g, ok, {{"batch", {4}}});
  ASSERT_EQ(p.entries.size(), 1u);
  EXPECT_EQ(p.entries[0].expr, "out = gelu_tanh((in0 + in1[col]))");
  EXPECT_EQ(p.entries[0].name, "tiny_add_gelu");
  EXPECT_EQ(p.entries[0].sizes, std::vector<std::string>{"4x3072"});
  // A plan survives its own JSON.
  Plan back = plan_from_json(plan_to_json(p), "p.json");
  EXPECT_EQ(back.entries[0].expr, p.entries[0].expr);
  EXPECT_EQ(back.entries[0].occurrences[0].inputs, p.entries[0].occurrences[0].inputs);
  const std::string bad = write("b.json", R"J({"format": "fusekit-graph", "version": 1, "nodes": [{"name": "n"}]})J");
  EXPECT_NE(error_of([&] { read_graph_json(bad); }).find("node 0 has no string \"op\""), std::string::npos);
  const std::string dt = write("d.json", R"J({"format": "fusekit-graph", "version": 1, "tensors": {"x": {"dtype": "f128"}}, "nodes": []})J");
  EXPECT_NE(error_of([&] { read_graph_json(dt); }).find("unknown dtype 'f128'"), std::string::npos);
}

}  // namespace
}  // namespace fusekit::graph
