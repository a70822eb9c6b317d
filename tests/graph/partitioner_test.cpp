// The partitioner's rules, each on a hand-built graph: chains and
// broadcasts merge, reductions take their prologue and same-space epilogue,
// regions stay convex and export what is used outside, limits hold, and
// what the language cannot say is reported with the reason.
#include <gtest/gtest.h>

#include "common/errors.h"
#include "generator/candidates/expr_parser.h"
#include "graph/canonicalize.h"
#include "graph/partitioner.h"
#include "graph/plan.h"
#include "tests/graph/graph_builder.h"

namespace fusekit::graph {
namespace {

using testing::D;
using testing::GraphBuilder;
using testing::S;

Plan plan_of(Graph& g, const PartitionLimits& limits = {}) {
  canonicalize(g);
  return make_plan(g, "test.onnx", {}, limits);
}

bool has_boundary(const Plan& p, const std::string& reason_part) {
  for (const auto& b : p.boundaries)
    if (b.reason.find(reason_part) != std::string::npos) return true;
  return false;
}

const Shape kBSH = S({D("batch"), D("seq"), D(768)});

TEST(Partitioner, ElementwiseChainBecomesOneFlatRegion) {
  GraphBuilder b;
  auto x = b.input("x", kBSH), y = b.input("y", kBSH), z = b.input("z", kBSH);
  auto t = b.node("Tanh", {b.node("Mul", {b.node("Sigmoid", {x}, kBSH), y}, kBSH)}, kBSH);
  b.output(b.node("Add", {t, z}, kBSH));
  Plan p = plan_of(b.graph());
  ASSERT_EQ(p.entries.size(), 1u);
  EXPECT_EQ(p.entries[0].expr, "out = (tanh((sigmoid(in0) * in1)) + in2)");
  EXPECT_EQ(p.entries[0].layout, "flat");
  EXPECT_EQ(p.nodes_in_regions, 4u);
  EXPECT_NO_THROW(parse_expression(p.entries[0].expr));
}

TEST(Partitioner, ComparisonsMadeInsideFeedWhereAndBooleansFromOutsideStop) {
  GraphBuilder b;
  auto x = b.input("x", kBSH);
  auto gt = b.node("Greater", {x, b.scalar(0.0)}, kBSH, {}, ElemType::kBool);
  b.output(b.node("Where", {gt, x, b.node("Mul", {x, b.scalar(0.1)}, kBSH)}, kBSH));
  Plan p = plan_of(b.graph());
  ASSERT_EQ(p.entries.size(), 1u);
  EXPECT_EQ(p.entries[0].expr, "out = where(in0 > 0, in0, (in0 * 0.100000001))");

  GraphBuilder m;
  auto y = m.input("y", kBSH), mask = m.input("mask", kBSH, ElemType::kBool);
  m.output(m.node("Where", {mask, m.node("Exp", {y}, kBSH), y}, kBSH));
  Plan q = plan_of(m.graph());
  EXPECT_EQ(q.regions, 0u);
  EXPECT_TRUE(has_boundary(q, "boolean input mask from outside a region"));
}

TEST(Partitioner, BiasPerColumnAndScalarsFold) {
  GraphBuilder b;
  auto x = b.input("x", kBSH), bias = b.input("bias", S({D(768)}));
  auto a = b.node("Add", {x, bias}, kBSH);
  b.output(b.node("Mul", {a, b.scalar(0.5)}, kBSH));
  Plan p = plan_of(b.graph());
  ASSERT_EQ(p.entries.size(), 1u);
  EXPECT_EQ(p.entries[0].expr, "out = ((in0 + in1[col]) * 0.5)");
  EXPECT_EQ(p.entries[0].layout, "rowcol");
  EXPECT_EQ(p.entries[0].occurrences[0].inputs.size(), 2u);  // the scalar is a number, not an input
}

TEST(Partitioner, PerChannelBatchNormAndReluInNchw) {
  GraphBuilder b;
  const Shape nchw = S({D("batch"), D(64), D(56), D(56)});
  auto x = b.input("x", nchw);
  std::vector<std::string> stats;
  for (const char* n : {"scale", "bias", "mean", "var"}) stats.push_back(b.input(n, S({D(64)})));
  auto bn = b.node("BatchNormalization", {x, stats[0], stats[1], stats[2], stats[3]}, nchw, {{"epsilon", 1e-5}});
  b.output(b.node("Relu", {bn}, nchw));
  Plan p = plan_of(b.graph());
  ASSERT_EQ(p.entries.size(), 1u);
  EXPECT_EQ(p.entries[0].layout, "nchw");
  EXPECT_NE(p.entries[0].expr.find("in1[c]"), std::string::npos) << p.entries[0].expr;
}

TEST(Partitioner, SoftmaxWrittenOutIsOneRowRegion) {
  GraphBuilder b;
  const Shape s4 = S({D("batch"), D(12), D("seq"), D("seq")});
  const Shape row = S({D("batch"), D(12), D("seq"), D(1)});
  auto x = b.input("x", s4);
  auto scaled = b.node("Div", {x, b.scalar(8.0)}, s4);
  auto m = b.node("ReduceMax", {scaled}, row, {{"axes", std::vector<int64_t>{-1}}});
  auto e = b.node("Exp", {b.node("Sub", {scaled, m}, s4)}, s4);
  auto sum = b.node("ReduceSum", {e, b.ints({-1})}, row);  // axes as an input (opset 13+)
  b.output(b.node("Div", {e, sum}, s4));
  Plan p = plan_of(b.graph());
  ASSERT_EQ(p.entries.size(), 1u) << coverage_report(p);
  EXPECT_EQ(p.entries[0].layout, "rows");
  EXPECT_EQ(p.nodes_in_regions, 6u);
  EXPECT_EQ(p.entries[0].occurrences[0].outputs.size(), 1u);
}

TEST(Partitioner, ResidualAddAndLayerNormWrittenOutWithTheSumExported) {
  GraphBuilder b(/*name=*/"m", /*opset=*/14);
  const Shape row = S({D("batch"), D("seq"), D(1)});
  auto x = b.input("x", kBSH), r = b.input("r", kBSH);
  auto w = b.input("w", S({D(768)})), beta = b.input("beta", S({D(768)}));
  auto sum = b.node("Add", {x, r}, kBSH);
  auto mean = b.node("ReduceMean", {sum}, row, {{"axes", std::vector<int64_t>{-1}}});
  auto d = b.node("Sub", {sum, mean}, kBSH);
  auto var = b.node("ReduceMean", {b.node("Pow", {d, b.scalar(2.0)}, kBSH)}, row, {{"axes", std::vector<int64_t>{-1}}});
  auto den = b.node("Sqrt", {b.node("Add", {var, b.scalar(1e-12)}, row)}, row);
  auto y = b.node("Add", {b.node("Mul", {b.node("Div", {d, den}, kBSH), w}, kBSH), beta}, kBSH);
  b.output(y);
  b.output(sum);  // the next residual reads the sum
  Plan p = plan_of(b.graph());
  ASSERT_EQ(p.entries.size(), 1u) << coverage_report(p);
  EXPECT_EQ(p.entries[0].layout, "rows");
  EXPECT_EQ(p.nodes_in_regions, 10u);
  EXPECT_EQ(p.entries[0].occurrences[0].outputs.size(), 2u);
}

TEST(Partitioner, LayerNormalizationOpAndReduceMeanAxesInput) {
  GraphBuilder b(/*name=*/"m", /*opset=*/18);
  auto x = b.input("x", kBSH), w = b.input("w", S({D(768)})), beta = b.input("beta", S({D(768)}));
  auto ln = b.node("LayerNormalization", {x, w, beta}, kBSH, {{"epsilon", 1e-5}});
  auto m = b.node("ReduceMean", {ln, b.ints({2})}, S({D("batch"), D("seq"), D(1)}));  // opset 18 form
  b.output(b.node("Sub", {ln, m}, kBSH));
  Plan p = plan_of(b.graph());
  ASSERT_EQ(p.entries.size(), 1u) << coverage_report(p);
  EXPECT_NE(p.entries[0].expr.find("rsqrt"), std::string::npos);
}

TEST(Partitioner, RmsNormWithCastsIsOneRegion) {
  GraphBuilder b;
  const Shape row = S({D("batch"), D("seq"), D(1)});
  auto x = b.input("x", kBSH), w = b.input("w", S({D(768)}));
  auto c = b.node("Cast", {x}, kBSH, {{"to", int64_t{1}}});  // f32 -> f32: removed
  auto ms = b.node("ReduceMean", {b.node("Pow", {c, b.scalar(2.0)}, kBSH)}, row, {{"axes", std::vector<int64_t>{-1}}});
  auto inv = b.node("Reciprocal", {b.node("Sqrt", {b.node("Add", {ms, b.scalar(1e-6)}, row)}, row)}, row);
  auto y = b.node("Cast", {b.node("Mul", {c, inv}, kBSH)}, kBSH, {{"to", int64_t{1}}});
  b.output(b.node("Mul", {w, y}, kBSH));
  Plan p = plan_of(b.graph());
  ASSERT_EQ(p.entries.size(), 1u) << coverage_report(p);
  EXPECT_EQ(p.nodes_in_regions, 7u);  // the two no-op Casts are gone
  EXPECT_EQ(p.nodes, 7u);
}

TEST(Partitioner, ErfGeluBecomesGeluAndTanhGeluStaysApart) {
  GraphBuilder b;
  auto x = b.input("x", kBSH), bias = b.input("bias", S({D(768)}));
  auto h = b.node("Add", {x, bias}, kBSH);
  auto erf = b.node("Erf", {b.node("Div", {h, b.scalar(1.4142135)}, kBSH)}, kBSH);
  auto g = b.node("Mul", {b.node("Mul", {h, b.node("Add", {erf, b.scalar(1.0)}, kBSH)}, kBSH), b.scalar(0.5)}, kBSH);
  b.output(g);
  // tanh form on a second input
  auto y = b.input("y", kBSH);
  auto cube = b.node("Mul", {b.node("Pow", {y, b.scalar(3.0)}, kBSH), b.scalar(0.044715)}, kBSH);
  auto inner = b.node("Mul", {b.node("Add", {y, cube}, kBSH), b.scalar(0.7978845608)}, kBSH);
  auto t = b.node("Add", {b.node("Tanh", {inner}, kBSH), b.scalar(1.0)}, kBSH);
  b.output(b.node("Mul", {b.node("Mul", {y, b.scalar(0.5)}, kBSH), t}, kBSH));
  Plan p = plan_of(b.graph());
  ASSERT_EQ(p.entries.size(), 2u) << coverage_report(p);
  EXPECT_EQ(p.entries[0].expr, "out = gelu((in0 + in1[col]))");
  EXPECT_NE(p.entries[1].expr.find("tanh("), std::string::npos);
  EXPECT_EQ(p.entries[1].expr.find("gelu"), std::string::npos);
}

TEST(Partitioner, IdentityAndDropoutAreRemoved) {
  GraphBuilder b;
  auto x = b.input("x", kBSH);
  auto i = b.node("Identity", {b.node("Relu", {x}, kBSH)}, kBSH);
  b.output(b.node("Exp", {b.node("Dropout", {i}, kBSH)}, kBSH));
  Plan p = plan_of(b.graph());
  EXPECT_EQ(p.nodes, 2u);
  ASSERT_EQ(p.entries.size(), 1u);
  EXPECT_EQ(p.entries[0].expr, "out = exp(relu(in0))");
}

TEST(Partitioner, RegionsStayConvexAroundAnUnfusedNode) {
  GraphBuilder b;
  auto x = b.input("x", kBSH), w = b.input("w", S({D(768), D(768)}));
  auto r = b.node("Relu", {b.node("Sigmoid", {x}, kBSH)}, kBSH);
  auto mm = b.node("MatMul", {r, w}, kBSH);
  b.output(b.node("Tanh", {b.node("Add", {r, mm}, kBSH)}, kBSH));
  Plan p = plan_of(b.graph());
  // {Sigmoid, Relu} and {Add, Tanh}: one region would need the MatMul inside it.
  ASSERT_EQ(p.regions, 2u) << coverage_report(p);
  EXPECT_TRUE(has_boundary(p, "anchor (MatMul)"));
}

TEST(Partitioner, ValuesUsedOutsideBecomeOutputs) {
  GraphBuilder b;
  auto x = b.input("x", kBSH), w = b.input("w", S({D(768), D(768)}));
  auto s = b.node("Sigmoid", {x}, kBSH);
  auto t = b.node("Tanh", {s}, kBSH);
  b.node("MatMul", {s, w}, kBSH);  // reads the intermediate
  b.output(t);
  Plan p = plan_of(b.graph());
  ASSERT_EQ(p.entries.size(), 1u);
  EXPECT_EQ(p.entries[0].expr, "out0 = sigmoid(in0)\nout1 = tanh(sigmoid(in0))");
}

TEST(Partitioner, LimitsSplitRegionsAndOneCheapOpIsLeftAlone) {
  GraphBuilder b;
  std::string v = b.input("x", kBSH);
  for (int i = 0; i < 6; ++i) v = b.node(i % 2 ? "Tanh" : "Sigmoid", {v}, kBSH);
  b.output(v);
  PartitionLimits limits;
  limits.max_ops = 3;
  Plan p = plan_of(b.graph(), limits);
  EXPECT_EQ(p.regions, 2u);
  for (const auto& e : p.entries) EXPECT_LE(e.occurrences[0].nodes.size(), 3u);

  GraphBuilder one;
  one.output(one.node("Relu", {one.input("x", kBSH)}, kBSH));
  Plan q = plan_of(one.graph());
  EXPECT_EQ(q.regions, 0u);
  EXPECT_TRUE(has_boundary(q, "a single cheap op"));
}

TEST(Partitioner, ArgumentLimitSplitsRegions) {
  GraphBuilder b;
  std::string v = b.input("x0", kBSH);
  for (int i = 1; i < 8; ++i) v = b.node("Add", {v, b.input("x" + std::to_string(i), kBSH)}, kBSH);
  b.output(v);
  PartitionLimits limits;
  limits.max_args = 4;
  Plan p = plan_of(b.graph(), limits);
  ASSERT_GE(p.regions, 2u);
  for (const auto& e : p.entries) EXPECT_LE(e.occurrences[0].inputs.size() + e.occurrences[0].outputs.size(), 4u);
}

TEST(Partitioner, SymbolicDimsAreComparedByName) {
  GraphBuilder b;
  const Shape other = S({D("batch"), D("seq2"), D(768)});
  auto x = b.input("x", kBSH), y = b.input("y", other);
  auto sx = b.node("Sigmoid", {x}, kBSH);
  auto sy = b.node("Sigmoid", {y}, other);
  // A dim the same sample value might give both, but symbolically different.
  b.output(b.node("Tanh", {sx}, kBSH));
  b.output(b.node("Tanh", {sy}, other));
  Plan p = plan_of(b.graph());
  EXPECT_EQ(p.regions, 2u);
  EXPECT_EQ(p.entries.size(), 1u);  // the same expression: one kernel
  EXPECT_EQ(p.entries[0].occurrences.size(), 2u);
}

TEST(Partitioner, IdenticalRegionsShareOneEntryAndSizesComeFromDims) {
  GraphBuilder b;
  for (int layer = 0; layer < 3; ++layer) {
    auto x = b.input("x" + std::to_string(layer), kBSH), bias = b.input("b" + std::to_string(layer), S({D(768)}));
    b.output(b.node("Relu", {b.node("Add", {x, bias}, kBSH)}, kBSH));
  }
  canonicalize(b.graph());
  Plan p = make_plan(b.graph(), "t.onnx", {{"batch", {1, 8}}, {"seq", {128}}});
  ASSERT_EQ(p.entries.size(), 1u);
  EXPECT_EQ(p.entries[0].occurrences.size(), 3u);
  EXPECT_EQ(p.entries[0].sizes, (std::vector<std::string>{"128x768", "1024x768"}));
  EXPECT_THROW(make_plan(b.graph(), "t.onnx", {{"heads", {12}}}), UserError);
}

TEST(Partitioner, NonLastAxisReductionIsReportedUnsupported) {
  GraphBuilder b;
  auto x = b.input("x", kBSH);
  auto e = b.node("Exp", {x}, kBSH);
  b.output(b.node("ReduceMean", {e}, S({D("batch"), D(1), D(768)}), {{"axes", std::vector<int64_t>{1}}}));
  Plan p = plan_of(b.graph());
  EXPECT_EQ(p.entries.size(), 0u);
  ASSERT_EQ(p.unsupported.size(), 1u);
  EXPECT_NE(p.unsupported[0].reason.find("non-last axis"), std::string::npos) << p.unsupported[0].reason;
}

// ResNet's head as exporters write it: GlobalAveragePool (TorchScript) or
// ReduceMean over [-1, -2] with keepdims (dynamo, axes as an attribute or an
// input) after the last residual add + relu: one region on the general nchw
// layout, the add + relu its prologue, the pooled [N, C, 1, 1] its output.
TEST(Partitioner, GlobalAveragePoolIsOneGeneralNchwRegionWithItsPrologue) {
  const Shape img = S({D("batch"), D(2048), D(7), D(7)}), pooled = S({D("batch"), D(2048), D(1), D(1)});
  for (int form = 0; form < 3; ++form) {
    GraphBuilder b("m", form == 2 ? 18 : 17);  // axes as an input from opset 18
    auto x = b.input("x", img), y = b.input("y", img);
    auto relu = b.node("Relu", {b.node("Add", {x, y}, img)}, img);
    std::string pool;
    if (form == 0) pool = b.node("GlobalAveragePool", {relu}, pooled);
    if (form == 1) pool = b.node("ReduceMean", {relu}, pooled, {{"axes", std::vector<int64_t>{-1, -2}}, {"keepdims", int64_t{1}}});
    if (form == 2) pool = b.node("ReduceMean", {relu, b.ints({2, 3})}, pooled);
    b.output(b.node("Flatten", {pool}, S({D("batch"), D(2048)}), {{"axis", int64_t{1}}}));
    canonicalize(b.graph());
    Plan p = make_plan(b.graph(), "t.onnx", {{"batch", {1, 32}}});
    ASSERT_EQ(p.entries.size(), 1u) << form << "\n" << coverage_report(p);
    EXPECT_TRUE(p.unsupported.empty()) << coverage_report(p);
    const PlanEntry& e = p.entries[0];
    EXPECT_EQ(e.expr, "out = mean(relu((in0 + in1)), hw)") << form;
    EXPECT_EQ(e.layout, "nchw");
    EXPECT_EQ(e.sizes, (std::vector<std::string>{"1x2048x49", "32x2048x49"}));
    EXPECT_EQ(p.nodes_in_regions, 3u);
    ASSERT_EQ(e.occurrences[0].outputs.size(), 1u);
    EXPECT_EQ(e.occurrences[0].outputs[0].second, pool);
    const FusionCandidate c = parse_expression(e.expr);
    EXPECT_TRUE(c.general);
    EXPECT_EQ(c.output_axes, (std::vector<int>{1, 2}));  // [n, c], innermost first
  }
}

// What a global pool cannot take: keepdims=0, other axes, a 3-D input, a
// prologue value also used whole outside (two output shapes), a row
// reduction beside it. Each is reported or kept apart, never a wrong kernel.
TEST(Partitioner, GlobalPoolLimitsAreReportedOrKeptApart) {
  const Shape img = S({D(8), D(64), D(14), D(14)}), pooled = S({D(8), D(64), D(1), D(1)});
  GraphBuilder k;
  auto kx = k.input("x", img);
  k.output(k.node("ReduceMean", {k.node("Exp", {kx}, img)}, S({D(8), D(64)}),
                  {{"axes", std::vector<int64_t>{2, 3}}, {"keepdims", int64_t{0}}}));
  Plan kp = plan_of(k.graph());
  ASSERT_EQ(kp.unsupported.size(), 1u) << coverage_report(kp);
  EXPECT_NE(kp.unsupported[0].reason.find("keepdims=0"), std::string::npos) << kp.unsupported[0].reason;

  GraphBuilder a;  // over C and H: not a pool
  auto ax = a.input("x", img);
  a.output(a.node("ReduceMean", {ax}, S({D(8), D(1), D(1), D(14)}), {{"axes", std::vector<int64_t>{1, 2}}}));
  Plan ap = plan_of(a.graph());
  ASSERT_EQ(ap.unsupported.size(), 1u) << coverage_report(ap);
  EXPECT_NE(ap.unsupported[0].reason.find("2 axes"), std::string::npos) << ap.unsupported[0].reason;

  GraphBuilder t;  // a 1-D spatial pool
  const Shape seq = S({D(8), D(64), D(100)});
  t.output(t.node("GlobalAveragePool", {t.input("x", seq)}, S({D(8), D(64), D(1)})));
  Plan tp = plan_of(t.graph());
  ASSERT_EQ(tp.unsupported.size(), 1u) << coverage_report(tp);
  EXPECT_NE(tp.unsupported[0].reason.find("3-D input"), std::string::npos) << tp.unsupported[0].reason;

  GraphBuilder u;  // the relu is also a graph output: it stays its own region
  auto ux = u.input("x", img), uy = u.input("y", img);
  auto relu = u.node("Relu", {u.node("Add", {ux, uy}, img)}, img);
  u.output(relu);
  u.output(u.node("GlobalMaxPool", {relu}, pooled));
  Plan up = plan_of(u.graph());
  ASSERT_EQ(up.entries.size(), 2u) << coverage_report(up);
  EXPECT_EQ(up.entries[0].expr, "out = relu((in0 + in1))");
  EXPECT_EQ(up.entries[1].expr, "out = max(in0, hw)");
  EXPECT_EQ(up.entries[1].layout, "nchw");

  GraphBuilder r;  // a softmax over W of the same tensor: two kernels
  auto rx = r.input("x", img);
  auto e = r.node("Exp", {rx}, img);
  r.output(r.node("Softmax", {e}, img, {{"axis", int64_t{-1}}}));
  r.output(r.node("GlobalAveragePool", {e}, pooled));
  Plan rp = plan_of(r.graph());
  EXPECT_TRUE(rp.unsupported.empty()) << coverage_report(rp);
  for (const auto& entry : rp.entries)
    EXPECT_FALSE(entry.expr.find(", hw)") != std::string::npos && entry.expr.find(", col)") != std::string::npos)
        << entry.expr;
}

TEST(Partitioner, SoftmaxOverANonLastAxisIsReportedUnsupported) {
  GraphBuilder b;
  auto x = b.input("x", kBSH);
  b.output(b.node("Softmax", {x}, kBSH, {{"axis", int64_t{1}}}));
  Plan p = plan_of(b.graph());
  ASSERT_EQ(p.unsupported.size(), 1u);
  EXPECT_NE(p.unsupported[0].reason.find("non-last axis"), std::string::npos);
}

// BERT's attention: a [batch, 1, 1, seq] mask over [batch, 12, seq, seq]
// scores, then softmax over the last axis: one ndrows region whose mask is
// indexed by the last axis and batch.
TEST(Partitioner, BertMaskOverScoresIsOneNdRowsRegion) {
  GraphBuilder b;
  const Shape s4 = S({D("batch"), D(12), D("seq"), D("seq")});
  auto x = b.input("scores", s4), mask = b.input("mask", S({D("batch"), D(1), D(1), D("seq")}));
  auto a = b.node("Add", {b.node("Div", {x, b.scalar(8.0)}, s4), mask}, s4);
  b.output(b.node("Softmax", {a}, s4, {{"axis", int64_t{-1}}}));
  canonicalize(b.graph());
  Plan p = make_plan(b.graph(), "t.onnx", {{"batch", {2}}, {"seq", {128}}});
  ASSERT_EQ(p.entries.size(), 1u) << coverage_report(p);
  EXPECT_EQ(p.unsupported.size(), 0u);
  EXPECT_EQ(p.entries[0].layout, "ndrows");
  EXPECT_EQ(p.nodes_in_regions, 3u);
  EXPECT_NE(p.entries[0].expr.find("in1[d0,d3]"), std::string::npos) << p.entries[0].expr;
  EXPECT_EQ(p.entries[0].sizes, (std::vector<std::string>{"2x12x128x128"}));
  EXPECT_EQ(parse_expression(p.entries[0].expr).layout, Layout::kNdRows);
}

// GPT-2's position table: [1, seq, 768] added to [batch, seq, 768] (then a
// bias per column): nd, the table indexed by the last two axes.
TEST(Partitioner, PositionTableOverBatchIsOneNdRegion) {
  GraphBuilder b;
  auto x = b.input("tok", kBSH), pos = b.input("pos", S({D(1), D("seq"), D(768)}));
  auto bias = b.input("bias", S({D(768)}));
  b.output(b.node("Relu", {b.node("Add", {b.node("Add", {x, pos}, kBSH), bias}, kBSH)}, kBSH));
  canonicalize(b.graph());
  Plan p = make_plan(b.graph(), "t.onnx", {{"batch", {4}}, {"seq", {33}}});
  ASSERT_EQ(p.entries.size(), 1u) << coverage_report(p);
  EXPECT_EQ(p.entries[0].layout, "nd");
  const std::string& e = p.entries[0].expr;
  EXPECT_NE(e.find("in1[d0,d1]"), std::string::npos) << e;
  EXPECT_NE(e.find("in2[d0]"), std::string::npos) << e;
  EXPECT_EQ(p.entries[0].sizes, (std::vector<std::string>{"4x33x768"}));
  // A concrete batch of 1 makes the table full-shape: no nd layout needed.
  GraphBuilder one;
  const Shape s1 = S({D(1), D("seq"), D(768)});
  auto x1 = one.input("tok", s1), pos1 = one.input("pos", S({D(1), D("seq"), D(768)}));
  one.output(one.node("Relu", {one.node("Add", {x1, pos1}, s1)}, s1));
  Plan p1 = plan_of(one.graph());
  ASSERT_EQ(p1.entries.size(), 1u);
  EXPECT_EQ(p1.entries[0].layout, "flat");
}

TEST(Partitioner, ShapesThatDoNotBroadcastAreReportedUnsupported) {
  // [batch, 2, 1, seq] against 12 heads: numpy refuses, so does the lowering.
  GraphBuilder b;
  const Shape s4 = S({D("batch"), D(12), D("seq"), D("seq")});
  auto x = b.input("scores", s4), mask = b.input("mask", S({D("batch"), D(2), D(1), D("seq")}));
  auto a = b.node("Add", {b.node("Div", {x, b.scalar(8.0)}, s4), mask}, s4);
  b.output(b.node("Softmax", {a}, s4, {{"axis", int64_t{-1}}}));
  Plan p = plan_of(b.graph());
  ASSERT_EQ(p.unsupported.size(), 1u) << coverage_report(p);
  EXPECT_NE(p.unsupported[0].reason.find("does not broadcast to"), std::string::npos) << p.unsupported[0].reason;
  EXPECT_EQ(p.unsupported[0].nodes.size(), 3u);
  // A general broadcast over five dims has no nd layout.
  GraphBuilder f;
  const Shape s5 = S({D("batch"), D(2), D(3), D("seq"), D(64)});
  auto y = f.input("y", s5), z = f.input("z", S({D("batch"), D(1), D(3), D(1), D(64)}));
  f.output(f.node("Relu", {f.node("Add", {y, z}, s5)}, s5));
  Plan q = plan_of(f.graph());
  ASSERT_EQ(q.unsupported.size(), 1u) << coverage_report(q);
  EXPECT_NE(q.unsupported[0].reason.find("at most 4 axes"), std::string::npos) << q.unsupported[0].reason;
}

TEST(Partitioner, IntegerShapeComputationsAreLeftAlone) {
  GraphBuilder b;
  auto x = b.input("x", kBSH);
  auto shape = b.node("Shape", {x}, S({D(3)}), {}, ElemType::kI64);
  b.output(b.node("Mul", {shape, b.ints({2, 2, 2})}, S({D(3)}), {}, ElemType::kI64));
  Plan p = plan_of(b.graph());
  EXPECT_EQ(p.regions, 0u);
  EXPECT_TRUE(has_boundary(p, "i64 output"));
}

TEST(SafeIdentifier, MakesCIdentifiers) {
  EXPECT_EQ(safe_identifier("bert./encoder/layer.0/Add"), "bert_encoder_layer_0_Add");
  EXPECT_EQ(safe_identifier("0abc"), "r_0abc");
  EXPECT_EQ(safe_identifier("x\"); system(\"rm"), "x_system_rm");
  EXPECT_EQ(safe_identifier(std::string(200, 'a')).size(), 80u);
}

}  // namespace
}  // namespace fusekit::graph
