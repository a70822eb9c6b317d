// Map:
//   collect_variants   database winners per op/dtype/arch/bucket -> rebuilt artifacts
//   write_table        images and launch descriptions as a C table
//   write_api          typed C entry points, generic call, explain
//   write_header/manifest/cmake_config, compile_package
#include "generator/package/library_emitter.h"
#include "generator/package/record_selection.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include <xxhash.h>

#include "common/errors.h"
#include "fusekit/shape_bucket.h"
#include "generator/candidate_workload.h"
#include "generator/candidates/catalog.h"
#include "generator/package/gemm_entries.h"
#include "generator/nvrtc/pointwise_printer.h"
#include "generator/nvrtc/nvrtc_compiler.h"
#include "generator/candidates/catalog.h"
#include "generator/candidates/op_traits.h"
#include "generator/nvrtc/kernel_printer.h"
#include "generator/nvrtc/row_printer.h"

namespace fusekit {
namespace {

namespace fs = std::filesystem;

// The oldest virtual arch CUDA 13 NVRTC accepts (it dropped compute_70).
const Arch kPortablePtx{7, 5};

struct Variant {
  const FusionCandidate* cand = nullptr;
  DType dtype = DType::kF32;
  int bucket = -1;
  int row_bucket = -1;  // row reductions' row-length bucket
  int sm = 0;  // 0: portable PTX
  KernelArtifact art;
  std::string schedule, record_id, gpu_name;
  bool measured = false;
};

bool is_catalog_pattern(const std::string& name) {
  for (const auto& c : catalog())
    if (c.name == name) return true;
  return false;
}

std::string c_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// Rebuilds a batch for one arch (in parallel, as the tuner does).
std::vector<KernelArtifact> build_all(const FusionCandidate& cand, DType dtype, const ArchLimits& arch,
                                      const std::vector<Candidate>& batch) {
  std::vector<BuildResult> built = make_kernel_builder(cand, dtype, arch)->build(batch);
  std::vector<KernelArtifact> out;
  for (size_t i = 0; i < batch.size(); ++i) {
    if (!built[i].ok)
      throw UserError("cannot rebuild " + cand.name + " " + dtype_name(dtype) + " " + backend_name(batch[i].backend) +
                      " '" + batch[i].config.to_string() + "' for " + arch.arch.name() + ": " + built[i].error);
    out.push_back(std::move(built[i].artifact));
  }
  return out;
}

KernelArtifact build_ptx(const FusionCandidate& cand, DType dtype, const Config& config, const std::string& entry) {
  Pipeline p = instantiate(cand, dtype);
  PrintedKernel k = print_nvrtc_kernel(cand, p, config, entry);
  NvrtcResult r = compile_cuda_to_ptx(k.source, entry, kPortablePtx, config.get_or("fast", 0) != 0);
  if (!r.ok) throw UserError("cannot compile portable PTX for " + entry + ": " + r.log);
  KernelArtifact a = k.launch;
  a.image_kind = ImageKind::kPtx;
  a.image = r.cubin;
  a.target_sm = 0;
  return a;
}

// Op name -> expression source of each packaged op that is not a catalog
// entry (an --expr op, a plan entry, a GEMM's tail), so that `fusekit verify
// --package` can rebuild its reference.
nlohmann::json expression_sources(const std::vector<Variant>& variants) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& v : variants)
    if (!is_catalog_pattern(v.cand->name) && !v.cand->description.empty()) out[v.cand->name] = v.cand->description;
  return out;
}

// Arch -> the shape buckets with usable records of `hash`; buckets with a
// row length supersede those without (records of row ops from before row
// lengths were bucketed).
std::map<std::string, std::set<std::string>> record_buckets(const TuneDb& db, const std::string& hash, DType dt) {
  RecordFilter f;
  f.dtype = dtype_name(dt);
  std::map<std::string, std::set<std::string>> buckets;
  for (const auto& r : db.all(f))
    if (r.pipeline_hash == hash && (r.status == RecordStatus::kOk || r.status == RecordStatus::kModeled))
      buckets[r.arch].insert(r.shape_bucket);
  for (auto& [arch_name, names] : buckets) {
    std::set<std::string> with_rows;
    for (const auto& name : names)
      if (name.find(" cols<=") != std::string::npos) with_rows.insert(name);
    if (!with_rows.empty()) names = with_rows;
  }
  return buckets;
}

// The winners of one bucket as variants (not built yet), their schedules appended to `batch`.
void bucket_variants(const TuneDb& db, const EmitOptions& o, const FusionCandidate& cand, DType dt, const Arch& arch,
                     const std::string& hash, const std::string& bucket, std::vector<Variant>* variants,
                     std::vector<Candidate>* batch, EmitReport* report) {
  const TuneKey key{hash, dtype_name(dt), bucket, arch.name()};
  const BucketChoice choice = choose_bucket_record(db, key, o.target, cand.name + " " + dtype_name(dt));
  if (!choice.best) return;
  report->selections.push_back(choice.explanation);
  // A winner compiled for one row length serves that length; the bucket's
  // other lengths get its best generic schedule beside it.
  std::vector<TuningRecord> winners{*choice.best};
  if (choice.best->row_length > 0)
    if (choice.best_generic) winners.push_back(*choice.best_generic);
  for (const TuningRecord& w : winners) {
    Variant v;
    v.cand = &cand;
    v.dtype = dt;
    if (!parse_shape_bucket(bucket, &v.bucket, &v.row_bucket))
      throw UserError("record " + w.id + " has a malformed shape bucket '" + bucket +
                      "'; expected e.g. 'n<=2^20' or 'n<=2^25 cols<=2^10'");
    v.sm = arch.number();
    v.schedule = w.params;
    v.record_id = w.id;
    v.gpu_name = w.gpu_name;
    v.measured = w.status == RecordStatus::kOk;
    batch->push_back({parse_backend(w.backend), Config::parse(w.params)});
    variants->push_back(std::move(v));
  }
}

// Every bucket's winners for one arch plus the generic fallback variant, built, appended to `out`.
void arch_variants(const TuneDb& db, const EmitOptions& o, const FusionCandidate& cand, DType dt, const Arch& arch,
                   const std::string& hash, const std::set<std::string>& buckets, std::vector<Variant>* out,
                   EmitReport* report) {
  std::vector<Variant> variants;
  std::vector<Candidate> batch;
  for (const auto& bucket : buckets) bucket_variants(db, o, cand, dt, arch, hash, bucket, &variants, &batch, report);
  if (std::none_of(variants.begin(), variants.end(), [](const Variant& v) { return v.measured; }))
    report->notes.push_back(cand.name + " " + dtype_name(dt) + " " + arch.name() +
                            ": no measured records; packaged from the model's ranking");
  Variant g;
  g.cand = &cand;
  g.dtype = dt;
  g.sm = arch.number();
  const Config generic = generic_schedule(cand.template_kind());
  g.schedule = generic.to_string();
  batch.push_back({generic_backend(cand.template_kind()), generic});
  variants.push_back(std::move(g));
  std::vector<KernelArtifact> arts = build_all(cand, dt, require_arch(arch.name()), batch);
  for (size_t i = 0; i < variants.size(); ++i) {
    variants[i].art = std::move(arts[i]);
    out->push_back(std::move(variants[i]));
  }
}

// Portable PTX: the generic variant and the newest arch's NVRTC winners that
// the portable target can run (not rows split across a cluster).
void add_portable_ptx(const FusionCandidate& cand, DType dt, const Arch& newest, std::vector<Variant>* out) {
  const ParamSpace portable = template_space(cand.template_kind(), *find_arch_limits(kPortablePtx), Backend::kNvrtc,
                                             static_cast<int>(dtype_bytes(dt)), cand.full_inputs(),
                                             op_traits(cand, dt));
  const size_t begin = out->size();
  for (size_t i = 0; i < begin; ++i) {
    const Variant& w = (*out)[i];
    if (w.cand != &cand || w.dtype != dt || w.sm != newest.number() || w.art.backend != "nvrtc") continue;
    const Config schedule = Config::parse(w.schedule);
    if (!w.record_id.empty() && !portable.legal(schedule)) continue;
    Variant p = w;
    p.sm = 0;
    p.art = build_ptx(cand, dt, schedule,
                      "fusekit_ptx_" + cand.name + "_" + dtype_name(dt) + "_" + std::to_string(out->size()));
    out->push_back(std::move(p));
  }
}

std::vector<Variant> collect_variants(const TuneDb& db, const EmitOptions& o, EmitReport* report) {
  std::vector<Variant> out;
  for (const auto& cand : o.candidates) {
    for (DType dt : {DType::kF32, DType::kF16, DType::kBF16}) {
      const std::string hash = pipeline_hash(canonical_pipeline_text(cand, dt));
      std::map<std::string, std::set<std::string>> buckets = record_buckets(db, hash, dt);
      if (buckets.empty()) continue;
      for (const Arch& arch : o.archs)
        if (!buckets.count(arch.name()))
          throw UserError("the database has records of " + cand.name + " " + dtype_name(dt) + " but none for " +
                          arch.name() + "; run `fusekit tune --arch " + arch.name() + " --pattern " + cand.name +
                          " --dtype " + dtype_name(dt) + "` first (it ranks with the model where that GPU is absent)");
      report->ops.push_back(cand.name + " " + dtype_name(dt));
      Arch newest = o.archs.front();
      for (const Arch& arch : o.archs) {
        if (newest < arch) newest = arch;
        arch_variants(db, o, cand, dt, arch, hash, buckets[arch.name()], &out, report);
      }
      add_portable_ptx(cand, dt, newest, &out);
    }
  }
  return out;
}

std::string ctype(DType dt) { return dt == DType::kF32 ? "float" : "uint16_t"; }

// Shape arguments of a typed entry point (outermost first) and the domain
// they make (innermost first).
std::vector<std::string> shape_args(Layout layout) {
  switch (layout) {
    case Layout::kFlat: return {"count"};
    case Layout::kRowCol:
    case Layout::kRows: return {"rows", "cols"};
    case Layout::kNchw: return {"batch", "channels", "spatial"};
    case Layout::kNd:
    case Layout::kNdRows: return {"dim3", "dim2", "dim1", "dim0"};
  }
  return {};
}

// A C parameter name for an input, output or scalar parameter: never one of
// the shape arguments, `stream`, or the wrappers' fk_ locals.
// C and C++ keywords and the names the header itself uses: an expression's
// names are identifiers, but these would not compile as parameter names.
bool is_reserved_name(const std::string& name) {
  static const std::set<std::string> kReserved = {
      "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool", "break", "case", "catch",
      "char", "char8_t", "char16_t", "char32_t", "class", "compl", "concept", "const", "consteval", "constexpr",
      "constinit", "const_cast", "continue", "co_await", "co_return", "co_yield", "decltype", "default", "delete",
      "do", "double", "dynamic_cast", "else", "enum", "explicit", "export", "extern", "false", "float", "for",
      "friend", "goto", "if", "inline", "int", "long", "mutable", "namespace", "new", "noexcept", "not", "not_eq",
      "nullptr", "operator", "or", "or_eq", "private", "protected", "public", "register", "reinterpret_cast",
      "requires", "restrict", "return", "short", "signed", "sizeof", "static", "static_assert", "static_cast",
      "struct", "switch", "template", "this", "thread_local", "throw", "true", "try", "typedef", "typeid",
      "typename", "union", "unsigned", "using", "virtual", "void", "volatile", "wchar_t", "while", "xor", "xor_eq",
      "int64_t", "uint16_t", "CUstream", "CUdeviceptr", "NULL"};
  return kReserved.count(name) > 0 || name.rfind("__", 0) == 0 ||
         (name.size() > 1 && name[0] == '_' && std::isupper(static_cast<unsigned char>(name[1])));
}

std::string arg_name(const std::string& name, Layout layout) {
  for (const auto& s : shape_args(layout))
    if (s == name) return name + "_";
  if (name == "stream" || name.rfind("fk_", 0) == 0) return name + "_";
  if (is_reserved_name(name)) return "arg_" + name;
  return name;
}

std::string signature(const FusionCandidate& c, DType dt) {
  std::string s = "int fusekit_" + c.name + "_" + dtype_name(dt) + "(";
  for (const auto& in : c.inputs) s += "const " + ctype(dt) + "* " + arg_name(in.name, c.layout) + ", ";
  for (const auto& o : c.outputs) s += ctype(dt) + "* " + arg_name(o, c.layout) + ", ";
  for (const auto& p : c.params) s += "float " + arg_name(p.name, c.layout) + ", ";
  for (const auto& a : shape_args(c.layout)) s += "int64_t " + a + ", ";
  return s + "CUstream stream)";
}

void write_file(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream f(path, std::ios::binary);
  f << text;
  if (!f) throw UserError("cannot write '" + path.string() + "'; check --out is writable");
}

std::string write_header(const std::vector<std::pair<const FusionCandidate*, DType>>& ops,
                         const std::string& gemm_declarations) {
  std::ostringstream h;
  h << "/* fusekit_kernels.h: generated by `fusekit build`. Do not edit.\n"
       " *\n"
       " * Every call launches one fused kernel on `stream` in the current CUDA context\n"
       " * and returns FUSEKIT_OK or an error code; fusekit_last_error() (per thread) says\n"
       " * why. Pointers are device pointers; f16/bf16 tensors are passed as uint16_t\n"
       " * (the bits of __half / __nv_bfloat16). Zero elements launch nothing. */\n"
       "#ifndef FUSEKIT_KERNELS_H_\n#define FUSEKIT_KERNELS_H_\n\n#include <stddef.h>\n#include <stdint.h>\n\n"
       "typedef struct CUstream_st* CUstream;\n\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n"
       "enum {\n  FUSEKIT_OK = 0,\n  FUSEKIT_INVALID_ARGUMENT = 1,\n  FUSEKIT_NOT_SUPPORTED = 2,\n"
       "  FUSEKIT_DRIVER_ERROR = 3,\n  FUSEKIT_NOT_FOUND = 4,\n  FUSEKIT_INTERNAL = 5\n};\n\n"
       "/* The message of this thread's last failed call (\"\" after a success). */\n"
       "const char* fusekit_last_error(void);\n\n";
  for (const auto& [c, dt] : ops) {
    h << "/* " << c->description << " (" << layout_name(c->layout) << ", " << dtype_name(dt) << ") */\n";
    h << signature(*c, dt) << ";\n\n";
  }
  h << gemm_declarations;
  h << "/* Any op by name: inputs, outputs and scalar parameters in the order of the typed\n"
       " * entry point; `domain` holds the shape arguments in the same order (outermost first). */\n"
       "int fusekit_launch(const char* op, const char* dtype, const void* const* inputs, int num_inputs,\n"
       "                   void* const* outputs, int num_outputs, const float* params, int num_params,\n"
       "                   const int64_t* domain, int rank, CUstream stream);\n\n"
       "/* Writes which kernel a call with this `domain` (as for fusekit_launch) and\n"
       " * `pointer_alignment`-byte aligned pointers would take on the current device, and\n"
       " * which fallback steps chose it. */\n"
       "int fusekit_explain(const char* op, const char* dtype, const int64_t* domain, int rank,\n"
       "                    int pointer_alignment, char* buffer, size_t size);\n\n"
       "#ifdef __cplusplus\n}  /* extern \"C\" */\n#endif\n\n#endif  /* FUSEKIT_KERNELS_H_ */\n";
  return h.str();
}

// Where an image is written for inspection and embedding: named by content,
// since Halide's entry names repeat across kernels.
std::string image_file_name(const KernelArtifact& a) {
  char hash[17];
  std::snprintf(hash, sizeof(hash), "%016llx",
                static_cast<unsigned long long>(XXH64(a.image.data(), a.image.size(), 0)));
  return a.entry + "-" + hash + (a.image_kind == ImageKind::kCubin ? ".cubin" : ".ptx");
}

// The images are embedded with the assembler's .incbin (fast to build at any
// size), each distinct image once; PTX gets a terminating NUL.
std::string write_table(const std::vector<Variant>& vs, const fs::path& image_dir) {
  std::ostringstream t;
  t << "// Generated by `fusekit build`: kernel images and launch descriptions.\n"
       "#include \"fusekit/package.h\"\n\n";
  std::map<std::string, size_t> distinct;  // file name -> image number
  std::vector<size_t> image_of(vs.size());
  std::vector<size_t> sizes;
  for (size_t i = 0; i < vs.size(); ++i) {
    const std::string file = image_file_name(vs[i].art);
    auto [it, added] = distinct.emplace(file, distinct.size());
    image_of[i] = it->second;
    if (!added) continue;
    const size_t k = it->second;
    const bool ptx = vs[i].art.image_kind == ImageKind::kPtx;
    sizes.push_back(vs[i].art.image.size() + (ptx ? 1 : 0));
    t << "asm(\".section .rodata\\n.balign 16\\n.globl fk_image_" << k << "\\n.hidden fk_image_" << k
      << "\\nfk_image_" << k << ":\\n.incbin \\\"" << (image_dir / file).string() << "\\\"\\n"
      << (ptx ? ".byte 0\\n" : "") << ".previous\");\n";
    t << "extern \"C\" const unsigned char fk_image_" << k << "[] __attribute__((visibility(\"hidden\")));\n";
  }
  t << "\nnamespace {\n\n";
  for (size_t i = 0; i < vs.size(); ++i) {
    t << "const fusekit_param_desc kParams" << i << "[] = {\n";
    for (const auto& p : vs[i].art.params)
      t << "  {" << static_cast<int>(p.kind) << ", " << static_cast<int>(p.type) << ", " << p.index << ", "
        << c_string(p.kind == KernelParam::Kind::kShape ? p.expr.to_string() : "") << "},\n";
    t << "};\n";
  }
  t << "\nconst fusekit_variant_desc kVariants[] = {\n";
  for (size_t i = 0; i < vs.size(); ++i) {
    const Variant& v = vs[i];
    const KernelArtifact& a = v.art;
    t << "  {" << c_string(v.cand->name) << ", " << static_cast<int>(v.dtype) << ", " << v.bucket << ", " << v.sm
      << ", " << (a.image_kind == ImageKind::kCubin ? 0 : 1) << ", fk_image_" << image_of[i] << ", "
      << sizes[image_of[i]] << ", " << c_string(a.entry) << ", {" << a.block[0] << ", " << a.block[1] << ", "
      << a.block[2] << "}, {" << c_string(a.grid[0].to_string()) << ", " << c_string(a.grid[1].to_string()) << ", "
      << c_string(a.grid[2].to_string()) << "}, " << a.shared_bytes << ", " << a.pointer_alignment << ", kParams"
      << i << ", " << a.params.size() << ", " << c_string(a.backend) << ", " << c_string(v.schedule) << ", "
      << c_string(v.record_id) << ", " << (v.measured ? 1 : 0) << ", " << (v.art.backend == "halide" ? 1 : 0)
      << ", " << v.row_bucket << ", " << v.art.row_length << ", " << v.art.row_multiple << "},\n";
  }
  t << "};\n\n}  // namespace\n\n"
       "fusekit::Package& fusekit_kernels_package() {\n"
       "  static fusekit::Package package(kVariants, sizeof(kVariants) / sizeof(kVariants[0]));\n"
       "  return package;\n}\n";
  return t.str();
}

// The C entry points' fixed text, in the order write_api emits it around
// the per-op parts.
const char* const kApiHead =
    "// Generated by `fusekit build`: the C entry points.\n"
    "#include <cstring>\n#include <string>\n\n#include \"fusekit/gemm_package.h\"\n#include \"fusekit/package.h\"\n"
    "#include \"fusekit_kernels.h\"\n\n"
    "fusekit::Package& fusekit_kernels_package();\nfusekit::GemmPackage& fusekit_kernels_gemm_package();\n\n"
    "namespace {\n\n"
    "thread_local std::string last_error;\n\n"
    "int finish(const fusekit::Status& st) {\n"
    "  if (st.ok()) last_error.clear();\n  else last_error = st.message();\n"
    "  return static_cast<int>(st.code());\n}\n\n"
    "// Shape of each op: rank, and per input the axes it is indexed by (bit k = axis k, innermost first; 0 = full);\n"
    "// a permuted input's axes in storage order (4 bits each, axis + 1, innermost first; 0 = as `axes`), and\n"
    "// the outputs' axes (bits; 0 = the whole domain).\n"
    "struct OpShape {\n  const char* op;\n  int rank;\n  int inputs;\n  int outputs;\n  int params;\n"
    "  unsigned axes[16];\n  unsigned order[16];\n  unsigned out_axes;\n};\n\nconst OpShape kOps[] = {\n";

const char* const kApiRun =
    "// Builds the launch from a domain (innermost first) and pointers, then launches.\n"
    "// The per-thread shape and argument objects keep their capacity, so a call\n"
    "// allocates nothing after the first.\n"
    "int run(const OpShape& op, fusekit::DType dtype, const void* const* in, void* const* out, const float* params,\n"
    "        const int64_t* domain_outer_first, CUstream stream) {\n"
    "  thread_local fusekit::LaunchShape s;\n"
    "  thread_local fusekit::LaunchArgs a;\n"
    "  s.domain.resize(op.rank);\n"
    "  for (int k = 0; k < op.rank; ++k) s.domain[k] = domain_outer_first[op.rank - 1 - k];\n"
    "  s.inputs.resize(op.inputs);\n"
    "  a.inputs.resize(op.inputs);\n"
    "  for (int i = 0; i < op.inputs; ++i) {\n"
    "    s.inputs[i].clear();\n"
    "    for (unsigned o = op.order[i]; o != 0; o >>= 4) s.inputs[i].push_back(s.domain[(o & 15u) - 1]);\n"
    "    for (int k = 0; k < op.rank && op.order[i] == 0; ++k)\n"
    "      if (op.axes[i] == 0 || (op.axes[i] >> k & 1u)) s.inputs[i].push_back(s.domain[k]);\n"
    "    a.inputs[i] = reinterpret_cast<CUdeviceptr>(in[i]);\n  }\n"
    "  s.outputs.resize(op.outputs);\n"
    "  a.outputs.resize(op.outputs);\n"
    "  for (int o = 0; o < op.outputs; ++o) {\n"
    "    s.outputs[o] = s.domain;\n"
    "    if (op.out_axes != 0) {\n"
    "      s.outputs[o].clear();\n"
    "      for (int k = 0; k < op.rank; ++k)\n"
    "        if (op.out_axes >> k & 1u) s.outputs[o].push_back(s.domain[k]);\n"
    "    }\n"
    "    a.outputs[o] = reinterpret_cast<CUdeviceptr>(out[o]);\n  }\n"
    "  a.params.assign(params, params + op.params);\n"
    "  return finish(fusekit_kernels_package().launch(op.op, dtype, s, a, stream));\n}\n\n"
    "const OpShape* find_op(const char* name) {\n"
    "  for (const auto& op : kOps)\n    if (std::strcmp(op.op, name) == 0) return &op;\n  return nullptr;\n}\n\n";

const char* const kApiExtern =
    "}  // namespace\n\nextern \"C\" {\n\n"
    "const char* fusekit_last_error(void) { return last_error.c_str(); }\n\n";

const char* const kApiLaunchHead =
    "int fusekit_launch(const char* op, const char* dtype, const void* const* inputs, int num_inputs,\n"
    "                   void* const* outputs, int num_outputs, const float* params, int num_params,\n"
    "                   const int64_t* domain, int rank, CUstream stream) {\n";

const char* const kApiLaunchBodyAndExplain =
    "  if (!op || !dtype) return finish(fusekit::Status(fusekit::StatusCode::kInvalidArgument, \"null op or dtype\"));\n"
    "  const OpShape* s = find_op(op);\n"
    "  if (!s) return finish(fusekit::Status(fusekit::StatusCode::kNotFound, std::string(\"no op '\") + op + \"' in this package\"));\n"
    "  auto dt = fusekit::parse_dtype(dtype);\n"
    "  if (!dt) return finish(fusekit::Status(fusekit::StatusCode::kInvalidArgument, std::string(\"unknown dtype '\") + dtype + \"'\"));\n"
    "  if (num_inputs != s->inputs || num_outputs != s->outputs || num_params != s->params || rank != s->rank)\n"
    "    return finish(fusekit::Status(fusekit::StatusCode::kInvalidArgument,\n"
    "        std::string(op) + \" takes \" + std::to_string(s->inputs) + \" inputs, \" + std::to_string(s->outputs) +\n"
    "        \" outputs, \" + std::to_string(s->params) + \" parameters and a rank-\" + std::to_string(s->rank) + \" domain\"));\n"
    "  if (!domain || (s->inputs && !inputs) || (s->outputs && !outputs) || (s->params && !params))\n"
    "    return finish(fusekit::Status(fusekit::StatusCode::kInvalidArgument, \"null argument array\"));\n"
    "  return run(*s, *dt, inputs, outputs, params, domain, stream);\n}\n\n"
    "int fusekit_explain(const char* op, const char* dtype, const int64_t* domain, int rank,\n"
    "                    int pointer_alignment, char* buffer, size_t size) {\n"
    "  auto dt = dtype ? fusekit::parse_dtype(dtype) : std::nullopt;\n"
    "  if (!op || !dt) return finish(fusekit::Status(fusekit::StatusCode::kInvalidArgument, \"unknown op or dtype\"));\n"
    "  if (!domain || rank < 1) return finish(fusekit::Status(fusekit::StatusCode::kInvalidArgument, \"empty domain\"));\n"
    "  int64_t elements = 1;\n"
    "  for (int i = 0; i < rank; ++i) {\n"
    "    if (domain[i] < 0) return finish(fusekit::Status(fusekit::StatusCode::kInvalidArgument, \"negative extent \" + std::to_string(domain[i])));\n"
    "    elements *= domain[i];\n  }\n"
    "  fusekit::Selection sel;\n"
    "  fusekit::Status st = fusekit_kernels_package().explain(op, *dt, elements, domain[rank - 1], pointer_alignment, &sel);\n"
    "  if (st.ok() && buffer && size) {\n"
    "    std::string d = sel.describe();\n"
    "    std::strncpy(buffer, d.c_str(), size - 1);\n    buffer[size - 1] = '\\0';\n  }\n"
    "  return finish(st);\n}\n\n}  // extern \"C\"\n";

// kOps: one OpShape per op (rank, per-input axes, permutations, reduced outputs).
void write_op_shapes(std::ostringstream& a, const std::vector<std::pair<const FusionCandidate*, DType>>& ops) {
  std::set<std::string> seen;
  for (const auto& [c, dt] : ops) {
    if (!seen.insert(c->name).second) continue;
    if (c->inputs.size() > 16) throw UserError(c->name + ": more than 16 inputs");
    a << "  {" << c_string(c->name) << ", " << layout_axes(c->layout).size() << ", " << c->inputs.size() << ", "
      << c->outputs.size() << ", " << c->params.size() << ", {";
    for (const auto& in : c->inputs) {
      unsigned mask = 0;
      for (int ax : in.axes) mask |= 1u << ax;
      a << mask << "u, ";
    }
    a << "}";
    if (c->general) {  // general layouts: permuted inputs and reduced outputs
      a << ", {";
      for (const auto& in : c->inputs) {
        unsigned order = 0;
        for (size_t k = in.permuted() ? in.axes.size() : 0; k-- > 0;) order = order << 4 | (in.axes[k] + 1u);
        a << order << "u, ";
      }
      unsigned out = 0;
      if (c->output_axes.size() != layout_axes(c->layout).size())
        for (int ax : c->output_axes) out |= 1u << ax;
      a << "}, " << out << "u";
    }
    a << "},\n";
  }
  a << "};\n\n";
}

// One typed entry point per op and dtype, forwarding to run().
void write_typed_entries(std::ostringstream& a, const std::vector<std::pair<const FusionCandidate*, DType>>& ops) {
  for (const auto& [c, dt] : ops) {
    a << signature(*c, dt) << " {\n";
    // Locals are fk_-prefixed; argument names never are (arg_name).
    a << "  const void* fk_in[] = {";
    for (const auto& in : c->inputs) a << arg_name(in.name, c->layout) << ", ";
    a << "nullptr};\n  void* fk_out[] = {";
    for (const auto& o : c->outputs) a << arg_name(o, c->layout) << ", ";
    a << "nullptr};\n  const float fk_params[] = {";
    for (const auto& p : c->params) a << arg_name(p.name, c->layout) << ", ";
    a << "0.0f};\n  const int64_t fk_domain[] = {";
    for (const auto& s : shape_args(c->layout)) a << s << ", ";
    a << "};\n  static const OpShape* const fk_op = find_op(" << c_string(c->name) << ");\n"
      << "  return run(*fk_op, static_cast<fusekit::DType>(" << static_cast<int>(dt)
      << "), fk_in, fk_out, fk_params, fk_domain, stream);\n}\n\n";
  }
}

std::string write_api(const std::vector<std::pair<const FusionCandidate*, DType>>& ops, const GemmApiText& gemm) {
  std::ostringstream a;
  a << kApiHead;
  write_op_shapes(a, ops);
  a << kApiRun << gemm.helpers << kApiExtern << gemm.entries;
  write_typed_entries(a, ops);
  a << kApiLaunchHead << gemm.route << kApiLaunchBodyAndExplain;
  return a.str();
}

std::string write_cmake_config() {
  return R"cmake(# fusekit_kernelsConfig.cmake: generated by `fusekit build`.
#   find_package(fusekit_kernels REQUIRED)
#   target_link_libraries(app PRIVATE fusekit::kernels)         # static
#   target_link_libraries(app PRIVATE fusekit::kernels_shared)  # shared
include(CMakeFindDependencyMacro)
find_dependency(Threads)
get_filename_component(_fusekit_prefix "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
if(NOT TARGET fusekit::kernels)
  add_library(fusekit::kernels STATIC IMPORTED)
  set_target_properties(fusekit::kernels PROPERTIES
    IMPORTED_LOCATION "${_fusekit_prefix}/lib/libfusekit_kernels.a"
    INTERFACE_INCLUDE_DIRECTORIES "${_fusekit_prefix}/include"
    INTERFACE_LINK_LIBRARIES "Threads::Threads;${CMAKE_DL_LIBS}")
  add_library(fusekit::kernels_shared SHARED IMPORTED)
  set_target_properties(fusekit::kernels_shared PROPERTIES
    IMPORTED_LOCATION "${_fusekit_prefix}/lib/libfusekit_kernels.so"
    INTERFACE_INCLUDE_DIRECTORIES "${_fusekit_prefix}/include")
endif()
unset(_fusekit_prefix)
)cmake";
}

std::string quote(const std::string& s);

void run_command(const std::string& cmd, const fs::path& log) {
  const std::string full = cmd + " > " + quote(log.string()) + " 2>&1";
  if (std::system(full.c_str()) != 0) {
    std::ifstream f(log);
    std::stringstream s;
    s << f.rdbuf();
    std::string text = s.str();
    if (text.size() > 3000) text = "..." + text.substr(text.size() - 3000);
    throw UserError("package build step failed: " + cmd + "\n" + text);
  }
}

// A shell word: single quotes, each ' inside written as '\''.
std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

void compile_package(const EmitOptions& o, const fs::path& out) {
  const fs::path src = out / "src", obj = out / "src" / "obj", lib = out / "lib";
  fs::create_directories(obj);
  fs::create_directories(lib);
  const std::string flags = "-std=c++17 -O2 -fPIC -I" + quote((out / "include").string()) + " -I" +
                            quote(o.runtime_include) + " -I" + quote(o.cuda_include);
  // From the package folder: the table's .incbin paths are relative to it.
  for (const char* f : {"fusekit_kernels_table", "fusekit_kernels_api", "fusekit_kernels_gemm"})
    run_command("cd " + quote(out.string()) + " && " + o.cxx + " " + flags + " -c " +
                    quote((src / (std::string(f) + ".cpp")).string()) + " -o " +
                    quote((obj / (std::string(f) + ".o")).string()),
                obj / (std::string(f) + ".log"));
  const fs::path rt = obj / "runtime";
  fs::remove_all(rt);
  fs::create_directories(rt);
  run_command("cd " + quote(rt.string()) + " && ar x " + quote(o.runtime_library), obj / "ar_x.log");
  const std::string objects = quote((obj / "fusekit_kernels_table.o").string()) + " " +
                              quote((obj / "fusekit_kernels_api.o").string()) + " " +
                              quote((obj / "fusekit_kernels_gemm.o").string()) + " " + quote(rt.string()) + "/*.o";
  fs::remove(lib / "libfusekit_kernels.a");
  run_command("ar rcs " + quote((lib / "libfusekit_kernels.a").string()) + " " + objects, obj / "ar.log");
  run_command(o.cxx + " -shared -o " + quote((lib / "libfusekit_kernels.so").string()) + " " + objects +
                  " -ldl -lpthread",
              obj / "link.log");
}

// A tail winner's kernel as a variant of its epilogue op (bucketed by the
// M x N elements it was tuned at), and one generic variant per epilogue,
// dtype and arch for every other size.
void add_tail_variants(const std::vector<GemmEntry>& gemms, std::vector<Variant>* variants, EmitReport* report) {
  std::set<std::string> generic;
  for (const GemmEntry& e : gemms) {
    if (!e.point.tail) continue;
    const FusionCandidate& tail = e.gemm->epilogue;
    const ArchLimits& limits = require_arch("sm_" + std::to_string(e.sm));
    Variant v;
    v.cand = &tail;
    v.dtype = e.dtype;
    v.bucket = shape_bucket_log2(e.point.plan.tuned.m * e.n);
    v.sm = e.sm;
    v.schedule = e.point.tail_config.to_string();
    v.record_id = e.record_id;
    v.measured = true;
    std::vector<Candidate> batch = {{Backend::kNvrtc, e.point.tail_config}};
    const std::string key = tail.name + dtype_name(e.dtype) + std::to_string(e.sm);
    const bool add_generic = generic.insert(key).second;
    if (add_generic) batch.push_back({Backend::kNvrtc, generic_schedule(tail.template_kind())});
    std::vector<KernelArtifact> arts = build_all(tail, e.dtype, limits, batch);
    v.art = std::move(arts[0]);
    variants->push_back(std::move(v));
    if (add_generic) {
      Variant g;
      g.cand = &tail;
      g.dtype = e.dtype;
      g.sm = e.sm;
      g.schedule = batch[1].config.to_string();
      g.art = std::move(arts[1]);
      variants->push_back(std::move(g));
      report->ops.push_back(tail.name + " " + dtype_name(e.dtype));
    }
  }
  for (const GemmEntry& e : gemms) report->ops.push_back(e.gemm->name + " " + dtype_name(e.dtype) + " (GEMM)");
}

// --out may be new, an empty folder or an earlier package; anything else
// would be replaced wholesale, so it is refused.
void check_replaceable(const fs::path& target) {
  std::error_code ec;
  if (!fs::exists(target, ec)) return;
  if (!fs::is_directory(target, ec))
    throw UserError("--out " + target.string() + " is a file, not a folder; give another --out");
  if (fs::is_empty(target, ec) || fs::exists(target / "share" / "fusekit_kernels" / "manifest.json", ec)) return;
  throw UserError("--out " + target.string() + " is a folder that holds no fusekit package; give a new or empty "
                  "folder (the build replaces --out as a whole)");
}

// Moves the finished build into place; the old package, if any, goes only
// after the new one is there.
void replace_folder(const fs::path& built, const fs::path& target) {
  std::error_code ec;
  const fs::path old = built.string() + ".old";
  fs::remove_all(old, ec);
  if (fs::exists(target)) fs::rename(target, old);
  fs::rename(built, target);
  fs::remove_all(old, ec);
}

void build_into(const std::vector<Variant>& variants, const std::vector<std::pair<const FusionCandidate*, DType>>& ops,
                const std::vector<GemmEntry>& gemms, const EmitOptions& o, const fs::path& out, EmitReport* report);

}  // namespace

EmitReport emit_library(const TuneDb& db, const EmitOptions& options) {
  if (options.archs.empty()) throw UserError("build needs --arch, e.g. --arch sm_80,sm_86,sm_90");
  if (options.out_dir.empty()) throw UserError("build needs --out DIR");
  for (const Arch& a : options.archs) require_arch(a.name());
  // The build steps change directory: every input path absolute, and each
  // checked before anything is written.
  EmitOptions o = options;
  auto existing = [](const std::string& path, const char* flag, const char* what) {
    std::error_code ec;
    const fs::path p = fs::absolute(path, ec);
    if (path.empty() || ec || !fs::exists(p))
      throw UserError(std::string(what) + " '" + path + "' does not exist; pass " + flag + " PATH");
    return p.string();
  };
  o.runtime_library = existing(o.runtime_library, "--runtime-lib", "runtime library");
  o.runtime_include = existing(o.runtime_include, "--runtime-include", "runtime include folder");
  o.cuda_include = existing(o.cuda_include, "--cuda-include", "CUDA include folder");
  EmitReport report;
  std::vector<Variant> variants = collect_variants(db, o, &report);
  const std::vector<GemmEntry> gemms = collect_gemm_entries(db, o.gemms, o.archs, o.target, &report.selections);
  add_tail_variants(gemms, &variants, &report);
  if (variants.empty() && gemms.empty())
    throw UserError("the database has no verified or modeled records for the requested ops; run `fusekit tune` first");
  report.variants = variants.size();

  std::vector<std::pair<const FusionCandidate*, DType>> ops;
  for (const auto& v : variants)
    if (std::find(ops.begin(), ops.end(), std::make_pair(v.cand, v.dtype)) == ops.end()) ops.push_back({v.cand, v.dtype});

  // The package is built in a fresh folder beside --out and renamed into
  // place only when complete: a failed build leaves the old package, and no
  // file of an earlier build survives a rebuild.
  const fs::path final_out = fs::absolute(o.out_dir).lexically_normal();
  const fs::path target = final_out.filename().empty() ? final_out.parent_path() : final_out;
  check_replaceable(target);
  const fs::path out = target.parent_path() / ("." + target.filename().string() + ".fusekit-build-" +
                                               std::to_string(static_cast<long>(getpid())));
  fs::remove_all(out);
  fs::create_directories(out);
  try {
    build_into(variants, ops, gemms, o, out, &report);
  } catch (...) {
    std::error_code ec;
    fs::remove_all(out, ec);
    throw;
  }
  replace_folder(out, target);
  return report;
}

namespace {

void build_into(const std::vector<Variant>& variants, const std::vector<std::pair<const FusionCandidate*, DType>>& ops,
                const std::vector<GemmEntry>& gemms, const EmitOptions& o, const fs::path& out, EmitReport* report_out) {
  EmitReport& report = *report_out;
  const fs::path image_rel = fs::path("share") / "fusekit_kernels" / "kernels";
  const fs::path image_dir = out / image_rel;
  for (const auto& v : variants) write_file(image_dir / image_file_name(v.art), v.art.image);
  write_file(out / "include" / "fusekit_kernels.h", write_header(ops, write_gemm_declarations(gemms)));
  write_file(out / "src" / "fusekit_kernels_table.cpp", write_table(variants, image_rel));
  write_file(out / "src" / "fusekit_kernels_api.cpp", write_api(ops, write_gemm_api(gemms)));
  write_file(out / "src" / "fusekit_kernels_gemm.cpp", write_gemm_table(gemms));
  write_file(out / "lib" / "cmake" / "fusekit_kernels" / "fusekit_kernelsConfig.cmake", write_cmake_config());

  nlohmann::json manifest;
  manifest["generator"] = "fusekit build";
  manifest["archs"] = nlohmann::json::array();
  for (const Arch& a : o.archs) manifest["archs"].push_back(a.name());
  manifest["variants"] = nlohmann::json::array();
  for (const auto& v : variants) {
    manifest["variants"].push_back({
        {"op", v.cand->name}, {"dtype", dtype_name(v.dtype)},
        {"arch", v.sm ? "sm_" + std::to_string(v.sm) : "ptx (compute_75)"},
        {"image", image_kind_name(v.art.image_kind)}, {"entry", v.art.entry},
        {"image_file", "kernels/" + image_file_name(v.art)},
        {"shape_bucket", v.bucket >= 0 ? shape_bucket_name(int64_t{1} << v.bucket,
                                                           v.row_bucket >= 0 ? int64_t{1} << v.row_bucket : -1)
                                       : "generic"},
        {"backend", v.art.backend}, {"params", v.schedule}, {"record_id", v.record_id},
        {"provenance", v.record_id.empty() ? "generic (not tuned)" : v.measured ? "measured" : "modeled"},
        {"measured_on", v.gpu_name}, {"pointer_alignment", v.art.pointer_alignment},
        {"row_length", v.art.row_length > 0 ? nlohmann::json(v.art.row_length) : nlohmann::json("any")},
        {"row_multiple", v.art.row_multiple}});
  }
  manifest["expressions"] = expression_sources(variants);
  manifest["gemms"] = nlohmann::json::array();
  for (const auto& g : gemms)
    manifest["gemms"].push_back({{"op", g.gemm->name}, {"dtype", dtype_name(g.dtype)}, {"arch", "sm_" + std::to_string(g.sm)},
                                 {"epilogue", g.gemm->description}, {"b_transposed", g.gemm->b_transposed},
                                 {"m_bucket", "m<=2^" + std::to_string(g.m_log2)},
                                 {"n", g.n}, {"k", g.k}, {"backend", gemm_point_backend(g.point)},
                                 {"params", gemm_point_params(g.point)}, {"record_id", g.record_id}});
  manifest["notes"] = report.notes;
  write_file(out / "share" / "fusekit_kernels" / "manifest.json", manifest.dump(1) + "\n");
  compile_package(o, out);
}

}  // namespace

}  // namespace fusekit
