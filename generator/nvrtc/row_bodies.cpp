// Planning a row kernel's per-element values: kept bodies, reciprocals of
// row-invariant divisors, and the staged row's shared-memory layout.
#include "generator/nvrtc/row_bodies.h"

#include <algorithm>
#include <set>

#include "common/errors.h"
#include "generator/nvrtc/cuda_expr.h"

namespace fusekit {
namespace {

using Halide::Expr;
using Halide::Internal::Call;

// True when `e` reads no element of an input and no column: only the row's
// reductions (named in `reductions`), parameters and constants.
bool row_invariant(const Expr& e, const std::map<std::string, std::string>& reductions) {
  class Finder : public Halide::Internal::IRVisitor {
   public:
    explicit Finder(const std::map<std::string, std::string>& r) : reductions_(r) {}
    bool varies = false;

   private:
    using IRVisitor::visit;
    void visit(const Call* op) override {
      if (op->call_type == Call::Image) varies = true;
      else if (op->call_type != Call::Halide) IRVisitor::visit(op);
      // A reduction's value is the row's (its `row` argument is no column).
      else if (!reductions_.count(Halide::Internal::Function(op->func).name())) varies = true;
    }
    void visit(const Halide::Internal::Variable* op) override {
      if (!op->param.defined()) varies = true;
    }
    void visit(const Halide::Internal::Let*) override { varies = true; }
    const std::map<std::string, std::string>& reductions_;
  } finder(reductions);
  e.accept(&finder);
  return !finder.varies;
}

// Divisions of an output by a row-invariant value become multiplications by
// its reciprocal, computed once per row: rc<i> = 1 / d<i>. The result is
// within an ulp or two of the division, far inside any row tolerance.
class HoistRowDivisors : public Halide::Internal::IRMutator {
 public:
  HoistRowDivisors(const std::map<std::string, std::string>& reductions, std::vector<Halide::Var> vars)
      : reductions_(reductions), vars_(std::move(vars)) {}
  std::vector<Expr> divisors;
  std::vector<Halide::Func> funcs;  // fk_rc<i>(col, row), called in place of 1 / d<i>

 private:
  using IRMutator::visit;
  Expr visit(const Halide::Internal::Div* op) override {
    const Expr a = mutate(op->a);
    if (op->type != Halide::Float(32) || !row_invariant(op->b, reductions_))
      return Halide::Internal::Div::make(a, mutate(op->b));
    size_t i = 0;
    while (i < divisors.size() && !Halide::Internal::graph_equal(divisors[i], op->b)) ++i;
    if (i == divisors.size()) {
      divisors.push_back(op->b);
      funcs.emplace_back("fk_rc" + std::to_string(i));
      funcs.back()(vars_) = 1.0f / op->b;
    }
    return a * funcs[i](vars_);
  }
  const std::map<std::string, std::string>& reductions_;
  const std::vector<Halide::Var> vars_;
};

// Names of the images `e` reads ("in_x"), looking through calls to other
// Funcs except those named in `opaque` (reductions, kept bodies, reciprocals:
// values the kernel holds, not reads of an input).
void collect_images(const Expr& e, const std::map<std::string, std::string>& opaque, std::set<std::string>* out) {
  class Collector : public Halide::Internal::IRVisitor {
   public:
    Collector(const std::map<std::string, std::string>& o, std::set<std::string>* names) : opaque_(o), names_(names) {}

   private:
    using IRVisitor::visit;
    void visit(const Call* op) override {
      IRVisitor::visit(op);  // the arguments
      if (op->call_type == Call::Image) {
        names_->insert(op->param.defined() ? op->param.name() : op->name);
      } else if (op->call_type == Call::Halide) {
        const Halide::Internal::Function f(op->func);
        if (opaque_.count(f.name()) || !f.has_pure_definition()) return;
        for (const Expr& v : f.values()) v.accept(this);
      }
    }
    const std::map<std::string, std::string>& opaque_;
    std::set<std::string>* names_;
  } collector(opaque, out);
  e.accept(&collector);
}

// True when a reduction body is worth keeping per element for the outputs:
// anything but a plain (converted) input element.
bool worth_keeping(Expr e) {
  while (const auto* c = e.as<Halide::Internal::Cast>()) e = c->value;
  return !e.as<Call>() || e.as<Call>()->call_type == Call::PureExtern || e.as<Call>()->call_type == Call::Intrinsic;
}


// The outputs and cached bodies with each worthwhile reduction body they
// contain replaced by kb<k>; later bodies first, since they may contain
// earlier ones (bias_add_softmax's exp(scale * x + mask - max) holds the
// max's body).
void keep_bodies(const Pipeline& pipe, const RowSchedule& sched, RowBodies* b) {
  const size_t nred = pipe.reductions.size();
  for (size_t k = nred; k-- > 0;) {
    const Expr body = pipe.reductions[k].body.value();
    // A pair's second body is evaluated against the thread's own statistic
    // (its mean or max), not the row's: nothing to keep for the outputs.
    if (!sched.keep_bodies || !worth_keeping(body) || sched.pair_second(k)) continue;
    Halide::Func kb("fk_kb" + std::to_string(k));
    kb(pipe.vars) = body;
    bool used = false;
    auto replace_in = [&](Expr& e) {
      const Expr replaced = Halide::Internal::substitute(body, kb(pipe.vars), e);
      used = used || !replaced.same_as(e);
      e = replaced;
    };
    for (auto& e : b->outputs) replace_in(e);
    if (sched.feed_later)
      for (size_t j = k + 1; j < nred; ++j) replace_in(b->cached_bodies[j]);
    if (!used) continue;
    b->kept.insert(b->kept.begin(), k);
    b->point_values[kb.name()] = "kb" + std::to_string(k);
  }
}

}  // namespace

bool RowBodies::is_kept(size_t k) const { return std::find(kept.begin(), kept.end(), k) != kept.end(); }

std::vector<std::string> RowBodies::kept_before(size_t k) const {
  std::vector<std::string> names;
  for (size_t i : kept)
    if (i < k) names.push_back("kb" + std::to_string(i));
  return names;
}

RowBodies plan_kept_bodies(const Pipeline& pipe, const RowSchedule& sched) {
  RowBodies b;
  const size_t nred = pipe.reductions.size();
  for (size_t k = 0; k < nred; ++k) b.red_values[pipe.reductions[k].func.name()] = "red" + std::to_string(k);
  b.outputs = pipe.stored;
  b.point_values = b.red_values;
  for (const auto& r : pipe.reductions) b.cached_bodies.push_back(r.body.value());
  keep_bodies(pipe, sched, &b);
  for (size_t k = 0; k < nred; ++k) b.reads_kept.push_back(!b.cached_bodies[k].same_as(pipe.reductions[k].body.value()));
  return b;
}

void hoist_row_divisors(const Pipeline& pipe, RowBodies* b) {
  HoistRowDivisors hoist(b->red_values, pipe.vars);
  for (auto& e : b->outputs) e = hoist.mutate(e);
  for (size_t i = 0; i < hoist.funcs.size(); ++i) b->point_values[hoist.funcs[i].name()] = "rc" + std::to_string(i);
  b->divisors = hoist.divisors;
}

bool RowStage::holds(const std::string& input) const {
  return std::any_of(arrays.begin(), arrays.end(), [&](const StageArray& a) { return a.name == "s_" + input; });
}

RowStage plan_row_stage(const FusionCandidate& cand, const Pipeline& pipe, const RowSchedule& sched,
                        const RowBodies& bodies, const Config& config) {
  RowStage stage;
  if (!sched.staged) return stage;
  std::set<std::string> later_reads;
  for (size_t k = 1; k < pipe.reductions.size(); ++k)
    collect_images(bodies.cached_bodies[k], bodies.point_values, &later_reads);
  for (const auto& e : bodies.outputs) collect_images(e, bodies.point_values, &later_reads);
  const int64_t slots = static_cast<int64_t>(sched.cache) * sched.rows * sched.threads;
  auto place = [&](const std::string& name, const std::string& type, int64_t bytes, bool buffered) {
    stage.arrays.push_back({name, type, stage.bytes, buffered});
    stage.bytes += (buffered ? 2 : 1) * ((bytes + 15) / 16 * 16);
  };
  // A persistent block's first pass reads the staged row too, and the
  // next group's copy lands in a second buffer.
  const bool persist = sched.persist > 0;
  for (const auto& in : cand.inputs)
    if (in.reads_rows() && (persist || later_reads.count(halide_input_name(in.name))))
      place("s_" + in.name, "cache_t", slots * sched.vec * static_cast<int64_t>(dtype_bytes(pipe.dtype)), persist);
  for (size_t k : bodies.kept) place("sk" + std::to_string(k), "float", slots * sched.vec * 4, false);
  // sm_90's opt-in maximum, less the combine's static shared memory.
  constexpr int64_t kMostStaged = 227 * 1024 - 4096;
  if (stage.bytes > kMostStaged)
    throw UserError("schedule '" + config.to_string() + "' stages " + std::to_string(stage.bytes) +
                    " bytes of row per block in shared memory; no arch grants more than " +
                    std::to_string(kMostStaged) + ": lower cache, threads or rows");
  return stage;
}

}  // namespace fusekit
