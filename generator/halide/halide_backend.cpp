// Map:
//   KernelFinder    walks the lowered body, keeping the LetStmt scope, and
//                   records the PTX and each halide_cuda_run call
//   ShapeTranslator host-side integer Exprs -> LaunchExpr over buffer shapes
//   build_halide_kernel  schedule, lower, PTX, launch description
#include "generator/halide/halide_backend.h"

#include <algorithm>
#include <map>

#include "common/errors.h"
#include "generator/candidates/general_layout.h"
#include "generator/halide/gpu_math_lowering.h"
#include "generator/halide/sink_scalar_math.h"
#include "schedules/pointwise_template.h"
#include "schedules/row_reduction_template.h"

namespace fusekit {
namespace {

using namespace Halide;
using namespace Halide::Internal;

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// A halide_cuda_run call found in the lowered body, with the LetStmt scope
// visible at the call.
struct KernelSite {
  const Call* run = nullptr;
  std::map<std::string, Expr> scope;
};

// Halide 14 offloads GPU loops during lowering (inject_gpu_offload): the
// lowered body holds halide_cuda_initialize_kernels(state, ptx, size) and one
// halide_cuda_run(state, name, blocks xyz, threads xyz, shared, sizes, args,
// is_buffer) per kernel. We read both and launch the PTX ourselves.
class KernelFinder : public IRVisitor {
 public:
  std::vector<KernelSite> sites;
  std::string ptx;
  int init_calls = 0;

 private:
  using IRVisitor::visit;
  std::vector<std::pair<std::string, Expr>> lets_;

  void visit(const LetStmt* op) override {
    op->value.accept(this);
    lets_.emplace_back(op->name, op->value);
    op->body.accept(this);
    lets_.pop_back();
  }
  void visit(const Call* op) override {
    if (op->name == "halide_cuda_run") {
      KernelSite s;
      s.run = op;
      for (const auto& [name, value] : lets_) s.scope[name] = value;  // later lets shadow earlier ones
      sites.push_back(s);
    } else if (op->name == "halide_cuda_initialize_kernels" && op->args.size() >= 2) {
      ++init_calls;
      // args[1] = _halide_buffer_get_host(<name>.buffer), the Variable
      // carrying the PTX bytes as its image.
      if (const auto* get = op->args[1].as<Call>()) {
        if (!get->args.empty())
          if (const auto* v = get->args[0].as<Variable>(); v && v->image.defined()) {
            const Halide::Buffer<>& img = v->image;
            ptx.assign(reinterpret_cast<const char*>(img.data()), img.size_in_bytes());
          }
      }
    }
    IRVisitor::visit(op);
  }
};

class ShapeTranslator {
 public:
  ShapeTranslator(const std::map<std::string, Expr>& scope, const std::map<std::string, std::string>& buffers)
      : scope_(scope), buffers_(buffers) {}

  LaunchExpr translate(const Expr& e) {
    using Op = LaunchExpr::Op;
    if (const auto* op = e.as<IntImm>()) return LaunchExpr(op->value);
    if (const auto* op = e.as<UIntImm>()) return LaunchExpr(static_cast<int64_t>(op->value));
    if (const auto* op = e.as<Cast>()) {
      if (!op->type.is_int_or_uint()) fail(e);
      return translate(op->value);
    }
    if (const auto* op = e.as<Variable>()) return variable(op->name, e);
    if (const auto* op = e.as<Add>()) return bin(Op::kAdd, op->a, op->b);
    if (const auto* op = e.as<Sub>()) return bin(Op::kSub, op->a, op->b);
    if (const auto* op = e.as<Mul>()) return bin(Op::kMul, op->a, op->b);
    if (const auto* op = e.as<Div>()) return bin(Op::kDiv, op->a, op->b);
    if (const auto* op = e.as<Mod>()) return bin(Op::kMod, op->a, op->b);
    if (const auto* op = e.as<Min>()) return bin(Op::kMin, op->a, op->b);
    if (const auto* op = e.as<Max>()) return bin(Op::kMax, op->a, op->b);
    if (const auto* op = e.as<LT>()) return bin(Op::kLt, op->a, op->b);
    if (const auto* op = e.as<LE>()) return bin(Op::kLe, op->a, op->b);
    if (const auto* op = e.as<GT>()) return bin(Op::kLt, op->b, op->a);
    if (const auto* op = e.as<GE>()) return bin(Op::kLe, op->b, op->a);
    if (const auto* op = e.as<EQ>()) return bin(Op::kEq, op->a, op->b);
    if (const auto* op = e.as<NE>()) return bin(Op::kNe, op->a, op->b);
    if (const auto* op = e.as<And>()) return bin(Op::kAnd, op->a, op->b);
    if (const auto* op = e.as<Or>()) return bin(Op::kOr, op->a, op->b);
    if (const auto* op = e.as<Not>()) return LaunchExpr::make(Op::kNot, {translate(op->a)});
    if (const auto* op = e.as<Select>())
      return LaunchExpr::make(Op::kSelect, {translate(op->condition), translate(op->true_value), translate(op->false_value)});
    if (const auto* op = e.as<Let>()) {
      std::map<std::string, Expr> inner = scope_;
      inner[op->name] = op->value;
      ShapeTranslator t(inner, buffers_);
      return t.translate(op->body);
    }
    if (const auto* op = e.as<Call>()) {
      if (op->is_intrinsic(Call::likely) || op->is_intrinsic(Call::likely_if_innermost) ||
          op->is_intrinsic(Call::promise_clamped) || op->is_intrinsic(Call::unsafe_promise_clamped))
        return translate(op->args[0]);
      static const std::pair<const char*, const char*> getters[] = {
          {"_halide_buffer_get_extent", "extent"}, {"_halide_buffer_get_min", "min"}, {"_halide_buffer_get_stride", "stride"}};
      for (const auto& [fn, field] : getters) {
        if (op->name != fn || op->args.size() != 2) continue;
        const auto* buf = op->args[0].as<Variable>();
        const auto* dim = op->args[1].as<IntImm>();
        if (!buf || !dim || !ends_with(buf->name, ".buffer")) fail(e);
        return tensor_symbol(buf->name.substr(0, buf->name.size() - 7), field, dim->value, e);
      }
    }
    fail(e);
  }

 private:
  LaunchExpr bin(LaunchExpr::Op op, const Expr& a, const Expr& b) {
    return LaunchExpr::make(op, {translate(a), translate(b)});
  }

  LaunchExpr variable(const std::string& name, const Expr& e) {
    auto it = scope_.find(name);
    if (it != scope_.end()) {
      auto memo = memo_.find(name);
      if (memo != memo_.end()) return memo->second;
      // Translate the let's value in the scope as it stood (names are unique
      // in lowered Halide code, so the full scope is equivalent).
      LaunchExpr v = translate(it->second);
      memo_[name] = v;
      return v;
    }
    // "<buffer>.<field>.<dim>" referenced directly.
    for (const char* field : {"extent", "min", "stride"}) {
      const std::string tag = std::string(".") + field + ".";
      size_t pos = name.rfind(tag);
      if (pos == std::string::npos) continue;
      const std::string dim = name.substr(pos + tag.size());
      if (dim.empty() || dim.find_first_not_of("0123456789") != std::string::npos) continue;
      return tensor_symbol(name.substr(0, pos), field, std::stoll(dim), e);
    }
    fail(e);
  }

  LaunchExpr tensor_symbol(const std::string& buffer, const std::string& field, int64_t dim, const Expr& e) {
    auto it = buffers_.find(buffer);
    if (it == buffers_.end()) fail(e);
    return LaunchExpr::symbol(it->second + "." + field + "." + std::to_string(dim));
  }

  [[noreturn]] void fail(const Expr& e) {
    std::ostringstream s;
    s << e;
    throw UserError("halide backend: cannot translate host expression '" + s.str() + "' into a launch description");
  }

  const std::map<std::string, Expr>& scope_;
  const std::map<std::string, std::string>& buffers_;
  std::map<std::string, LaunchExpr> memo_;
};

Target cuda_target(const ArchLimits& arch) {
  Target t = get_host_target();
  t = t.with_feature(Target::CUDA);
  switch (arch.halide_cuda_capability) {
    case 70: t = t.with_feature(Target::CUDACapability70); break;
    case 75: t = t.with_feature(Target::CUDACapability75); break;
    case 80: t = t.with_feature(Target::CUDACapability80); break;
    default: t = t.with_feature(Target::CUDACapability86); break;
  }
  return t;
}

// The candidate's pipeline with GPU math calls lowered and the schedule
// template of its kind applied.
Pipeline scheduled_pipeline(const FusionCandidate& cand, DType dtype, const Config& config, const ArchLimits& arch) {
  Pipeline p = instantiate(cand, dtype, /*f64_reductions=*/false, /*storage_bits=*/true);
  lower_gpu_math_calls(p.output);
  for (auto& r : p.reductions) {
    lower_gpu_math_calls(r.body);
    lower_gpu_math_calls(r.total);
    lower_gpu_math_calls(r.func);
  }
  for (auto& r : p.axis_reductions) {
    lower_gpu_math_calls(r.body);
    lower_gpu_math_calls(r.total);
    lower_gpu_math_calls(r.func);
  }
  p.constrain_buffers();
  if (cand.general) {
    GeneralLayoutTemplate::apply_halide(general_layout_shape(cand, p), config);
  } else if (cand.reduces()) {
    std::vector<std::pair<Func, RDom>> reductions;
    for (const auto& r : p.reductions) reductions.push_back({r.total, r.rdom});
    RowReductionTemplate::apply_halide(p.output, p.vars, reductions, p.inputs, static_cast<int>(dtype_bytes(dtype)),
                                       arch.max_shared_per_block, config);
  } else {
    PointwiseTemplate::apply_halide(p.output, p.vars, config);
  }
  return p;
}

// The lowered body of `entry` searched for its one kernel launch and PTX.
KernelFinder find_kernel(const Module& module, const std::string& entry) {
  const LoweredFunc* fn = nullptr;
  for (const auto& f : module.functions())
    if (f.name == entry) fn = &f;
  if (!fn) throw InternalError("halide backend: lowered module has no function " + entry);
  KernelFinder finder;
  fn->body.accept(&finder);
  if (finder.sites.size() != 1)
    throw UserError("halide backend: schedule produced " + std::to_string(finder.sites.size()) +
                    " GPU kernels; the templates expect exactly one");
  if (finder.init_calls != 1 || finder.ptx.empty())
    throw UserError("halide backend: no PTX module found in the lowered pipeline");
  if (finder.sites.front().run->args.size() != 12)
    throw UserError("halide backend: unexpected halide_cuda_run signature");
  while (!finder.ptx.empty() && finder.ptx.back() == '\0') finder.ptx.pop_back();
  // Halide 14 links libdevice only for the math it maps itself; any other
  // call (e.g. erff) stays an unresolved extern the driver cannot load.
  if (size_t ext = finder.ptx.find(".extern .func"); ext != std::string::npos) {
    const std::string decl = finder.ptx.substr(ext, std::min<size_t>(finder.ptx.find('\n', ext) - ext, 120));
    throw UserError("halide backend: the PTX calls an external function Halide 14 does not link (" + decl +
                    "); use the nvrtc backend for this pipeline");
  }
  return finder;
}

// Tensor names as Halide knows them -> "in<i>" / "out<k>".
std::map<std::string, std::string> tensor_names(const Pipeline& p) {
  std::map<std::string, std::string> buffers;
  for (size_t i = 0; i < p.inputs.size(); ++i) buffers[p.inputs[i].name()] = "in" + std::to_string(i);
  const auto outs = p.output.output_buffers();
  for (size_t k = 0; k < outs.size(); ++k) buffers[outs[k].name()] = "out" + std::to_string(k);
  return buffers;
}

// Grid, block and shared memory of the launch, and the block size written
// into the PTX.
void set_launch_shape(const Call* run, ShapeTranslator& shapes, KernelArtifact* art) {
  for (int i = 0; i < 3; ++i) {
    art->grid[i] = shapes.translate(run->args[2 + i]);
    LaunchExpr threads = shapes.translate(run->args[5 + i]);
    if (threads.op() != LaunchExpr::Op::kConst) throw UserError("halide backend: thread extent is not a constant");
    art->block[i] = static_cast<int>(threads.value());
  }
  // Halide 14 does not tell ptxas the block size, which then may give a
  // thread more registers than a block of it can have (a launch fails with
  // CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES: add_layernorm at 1024 threads, 72
  // registers). .maxntid caps them (64 there, no spills).
  const std::string entry_decl = ".entry " + art->entry + "(";
  const size_t at = art->image.find(entry_decl);
  const size_t params_end = at == std::string::npos ? at : art->image.find("\n)\n", at);
  if (params_end == std::string::npos)
    throw UserError("halide backend: no parameter list for " + art->entry + " in the PTX");
  art->image.insert(params_end + 3, ".maxntid " + std::to_string(art->block[0]) + ", " +
                                        std::to_string(art->block[1]) + ", " + std::to_string(art->block[2]) + "\n");
  art->source = art->image;
  // Shared memory: a constant, possibly as an unfolded expression.
  LaunchExpr shared = shapes.translate(run->args[8]);
  int64_t shared_bytes = 0;
  if (!shared.symbols().empty() ||
      !shared.evaluate([](const std::string&, int64_t*) { return false; }, &shared_bytes).ok())
    throw UserError("halide backend: shared memory size is not a constant: " + shared.to_string());
  art->shared_bytes = static_cast<int>(shared_bytes);
}

// A scalar kernel argument: a float the host computes from the shape, a
// scalar parameter of the candidate, or an integer or bool shape value.
KernelParam scalar_param(const Expr& value, const KernelSite& site, ShapeTranslator& shapes,
                         const FusionCandidate& cand) {
  KernelParam prm;
  const auto* var = value.as<Variable>();
  // A float the host computed from the shape (e.g. a row length for a
  // mean): the integer expression, converted at launch.
  Expr shape_float;
  if (value.type() == Float(32)) {
    Expr v = value;
    if (const auto* lv = v.as<Variable>(); lv && site.scope.count(lv->name)) v = site.scope.at(lv->name);
    if (const auto* cast = v.as<Cast>(); cast && cast->value.type().is_int()) shape_float = cast->value;
  }
  if (shape_float.defined()) {
    prm.kind = KernelParam::Kind::kShape;
    prm.type = KernelParam::Type::kF32;
    prm.expr = shapes.translate(shape_float);
  } else if (value.type() == Float(32)) {
    prm.kind = KernelParam::Kind::kScalarParam;
    prm.type = KernelParam::Type::kF32;
    prm.index = -1;
    for (size_t k = 0; var && k < cand.params.size(); ++k)
      if (halide_param_name(cand.params[k].name) == var->name) prm.index = static_cast<int>(k);
    if (prm.index < 0) throw UserError("halide backend: float kernel argument is not a parameter");
  } else if (value.type().is_bool() ||
             (value.type().is_int() && (value.type().bits() == 32 || value.type().bits() == 64))) {
    prm.kind = KernelParam::Kind::kShape;
    prm.type = value.type().is_bool()      ? KernelParam::Type::kBool
               : value.type().bits() == 32 ? KernelParam::Type::kI32
                                           : KernelParam::Type::kI64;
    prm.expr = shapes.translate(value);
  } else {
    std::ostringstream s;
    s << value << " : " << value.type();
    throw UserError("halide backend: unsupported scalar kernel argument " + s.str());
  }
  return prm;
}

// The kernel's parameters, in order, from halide_cuda_run's argument struct:
// buffers become device pointers, scalars scalar_param()s.
std::vector<KernelParam> kernel_params(const Call* run, const KernelSite& site,
                                       const std::map<std::string, std::string>& buffers, ShapeTranslator& shapes,
                                       const FusionCandidate& cand) {
  const auto* arg_struct = run->args[10].as<Call>();
  if (!arg_struct || !arg_struct->is_intrinsic(Call::make_struct))
    throw UserError("halide backend: unexpected kernel argument list");
  std::vector<KernelParam> params;
  for (const Expr& a : arg_struct->args) {
    if (is_const_zero(a)) continue;  // list terminator
    if (const auto* c = a.as<Call>(); c && c->is_intrinsic(Call::reinterpret)) continue;
    if (const auto* v = a.as<Variable>()) {
      // A buffer: "<name>.buffer"; the kernel receives its device pointer.
      if (!ends_with(v->name, ".buffer")) throw UserError("halide backend: unexpected kernel argument " + v->name);
      auto it = buffers.find(v->name.substr(0, v->name.size() - 7));
      if (it == buffers.end()) throw UserError("halide backend: kernel uses unknown buffer '" + v->name + "'");
      const bool is_input = it->second.rfind("in", 0) == 0;
      KernelParam prm;
      prm.kind = is_input ? KernelParam::Kind::kInput : KernelParam::Kind::kOutput;
      prm.type = KernelParam::Type::kPtr;
      prm.index = std::stoi(it->second.substr(is_input ? 2 : 3));
      params.push_back(prm);
    } else if (const auto* c = a.as<Call>(); c && c->is_intrinsic(Call::make_struct) && c->args.size() == 1) {
      params.push_back(scalar_param(c->args[0], site, shapes, cand));
    } else {
      std::ostringstream s;
      s << a;
      throw UserError("halide backend: unsupported kernel argument " + s.str());
    }
  }
  return params;
}

}  // namespace

std::string halide_version() { return "14.0.0"; }

KernelArtifact build_halide_kernel(const FusionCandidate& cand, DType dtype, const Config& config,
                                   const ArchLimits& arch, const std::string& entry_hint) {
  Pipeline p = scheduled_pipeline(cand, dtype, config, arch);
  Halide::Pipeline pipeline(p.output);
  Halide::Internal::IRMutator* sink = make_sink_scalar_math_pass();
  pipeline.add_custom_lowering_pass(sink, [sink] { delete sink; });
  const Module module = pipeline.compile_to_module(p.arguments(), entry_hint, cuda_target(arch));
  const KernelFinder finder = find_kernel(module, entry_hint);
  const KernelSite& site = finder.sites.front();
  const Call* run = site.run;
  const std::map<std::string, std::string> buffers = tensor_names(p);

  KernelArtifact art;
  art.backend = "halide";
  art.image_kind = ImageKind::kPtx;
  art.image = finder.ptx;
  art.source = art.image;
  const auto* name = run->args[1].as<StringImm>();
  if (!name) throw UserError("halide backend: kernel name is not a constant");
  art.entry = name->value;
  art.target_sm = arch.halide_cuda_capability;
  // A general-layout schedule declares no alignment: Halide proves none and
  // its vectors load element by element where it cannot.
  art.pointer_alignment = static_cast<int>((cand.general ? 1 : config.get_or("vec", 1)) * dtype_bytes(dtype));
  if (cand.reduces()) {
    art.row_multiple = RowReductionTemplate::row_multiple(config, Backend::kHalide);
    art.row_length = RowReductionTemplate::fixed_row_length(config);
  }
  ShapeTranslator shapes(site.scope, buffers);
  set_launch_shape(run, shapes, &art);
  art.params = kernel_params(run, site, buffers, shapes, cand);
  return art;
}

}  // namespace fusekit
