#include "generator/halide/sink_scalar_math.h"

#include <map>

namespace fusekit {
namespace {

using namespace Halide;
using namespace Halide::Internal;

// True for Exprs built from constants, variables and arithmetic only (no
// loads, no buffer queries), which a kernel can recompute from its scalars.
class IsScalarMath : public IRVisitor {
 public:
  bool ok = true;

 private:
  using IRVisitor::visit;
  void visit(const Load*) override { ok = false; }
  void visit(const Call* op) override {
    if (op->call_type != Call::PureExtern && op->call_type != Call::PureIntrinsic) ok = false;
    IRVisitor::visit(op);
  }
};

bool scalar_math(const Expr& e) {
  IsScalarMath v;
  e.accept(&v);
  return v.ok;
}

// True when `e` computes with floats anywhere (a parameter compared with a
// constant is a bool computed from one), so the host could not evaluate it.
class UsesFloat : public IRVisitor {
 public:
  bool found = false;

 private:
  using IRVisitor::visit;
  void visit(const Variable* op) override { found = found || op->type.is_float(); }
  void visit(const FloatImm*) override { found = true; }
};

bool uses_float(const Expr& e) {
  UsesFloat v;
  e.accept(&v);
  return v.found;
}

class SinkScalarMath : public IRMutator {
  using IRMutator::visit;
  std::map<std::string, Expr> floats_;  // hoisted lets computed with floats, in scope here
  bool in_kernel_ = false;

  Stmt visit(const LetStmt* op) override {
    if (in_kernel_ || !scalar_math(op->value)) return IRMutator::visit(op);
    const Expr value = substitute(floats_, op->value);  // earlier lets it uses, inlined
    if (!uses_float(value)) return IRMutator::visit(op);
    floats_[op->name] = value;
    Stmt body = mutate(op->body);
    floats_.erase(op->name);
    return LetStmt::make(op->name, op->value, body);
  }
  Stmt visit(const For* op) override {
    const bool kernel = !in_kernel_ && op->for_type == ForType::GPUBlock;
    if (!kernel) return IRMutator::visit(op);
    in_kernel_ = true;
    Stmt body = substitute(floats_, op->body);
    in_kernel_ = false;
    return For::make(op->name, op->min, op->extent, op->for_type, op->device_api, body);
  }
};

}  // namespace

IRMutator* make_sink_scalar_math_pass() { return new SinkScalarMath(); }

}  // namespace fusekit
