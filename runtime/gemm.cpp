#include "fusekit/gemm.h"

#include <cinttypes>
#include <cstdio>
#include <map>
#include <sstream>

namespace fusekit {
namespace {

struct EpilogueName {
  GemmEpilogue epilogue;
  const char* name;
};
constexpr EpilogueName kEpilogueNames[] = {
    {GemmEpilogue::kDefault, "default"}, {GemmEpilogue::kRelu, "relu"},
    {GemmEpilogue::kBias, "bias"},       {GemmEpilogue::kReluBias, "relu_bias"},
    {GemmEpilogue::kGelu, "gelu_tanh"},  {GemmEpilogue::kGeluBias, "gelu_tanh_bias"},
};

Status invalid(const std::string& message) { return Status(StatusCode::kInvalidArgument, message); }

std::string hex_pointer(uint64_t p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%" PRIx64, p);
  return buf;
}

Status check_pointer(const char* what, uint64_t p) {
  if (p == 0) return invalid(std::string("GEMM operand ") + what + " is a null pointer");
  if (p % kGemmPointerAlignment != 0)
    return invalid(std::string("GEMM operand ") + what + " at " + hex_pointer(p) + " is not " +
                   std::to_string(kGemmPointerAlignment) + "-byte aligned; pass a pointer from cudaMalloc or a " +
                   "tensor whose storage offset keeps that alignment");
  return Status();
}

// A row-major matrix's row length in bytes must keep every row aligned.
Status check_row(const char* what, int64_t elements, size_t element_bytes) {
  if ((static_cast<uint64_t>(elements) * element_bytes) % kGemmPointerAlignment != 0)
    return invalid(std::string("GEMM ") + what + " rows of " + std::to_string(elements) + " elements are not a " +
                   "multiple of " + std::to_string(kGemmPointerAlignment) + " bytes; pad that dimension");
  return Status();
}

}  // namespace

const char* gemm_epilogue_name(GemmEpilogue epilogue) {
  for (const auto& e : kEpilogueNames)
    if (e.epilogue == epilogue) return e.name;
  return "unknown";
}

bool parse_gemm_epilogue(const std::string& text, GemmEpilogue* out) {
  for (const auto& e : kEpilogueNames)
    if (text == e.name) {
      *out = e.epilogue;
      return true;
    }
  return false;
}

bool gemm_epilogue_has_bias(GemmEpilogue epilogue) {
  return epilogue == GemmEpilogue::kBias || epilogue == GemmEpilogue::kReluBias ||
         epilogue == GemmEpilogue::kGeluBias;
}

std::string gemm_algo_hex(const GemmAlgo& algo) {
  std::string s;
  char buf[17];
  for (uint64_t w : algo.data) {
    std::snprintf(buf, sizeof buf, "%016" PRIx64, w);
    s += buf;
  }
  return s;
}

Status parse_gemm_algo_hex(const std::string& text, GemmAlgo* algo) {
  if (text.size() != 128)
    return invalid("cuBLASLt algorithm '" + text.substr(0, 24) + (text.size() > 24 ? "..." : "") + "' has " +
                   std::to_string(text.size()) + " hex digits; a stored algorithm has 128");
  GemmAlgo out;
  for (int w = 0; w < 8; ++w) {
    uint64_t v = 0;
    for (int d = 0; d < 16; ++d) {
      const char c = text[w * 16 + d];
      int x = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
      if (x < 0) return invalid(std::string("cuBLASLt algorithm has '") + c + "' at digit " +
                                std::to_string(w * 16 + d) + "; expected lowercase hex");
      v = v << 4 | static_cast<uint64_t>(x);
    }
    out.data[w] = v;
  }
  *algo = out;
  return Status();
}

std::string gemm_plan_text(const GemmPlan& p) {
  const GemmShape& t = p.tuned;
  std::string s = std::string("ep=") + gemm_epilogue_name(p.epilogue) + " res=" + (p.residual ? "1" : "0") +
                  " shape=" + std::to_string(t.m) + "x" + std::to_string(t.n) + "x" + std::to_string(t.k) +
                  " bt=" + (t.b_transposed ? "1" : "0") + " dtype=" + dtype_name(t.dtype) +
                  " ws=" + std::to_string(p.workspace_bytes) + " cublaslt=" + std::to_string(p.cublaslt_version);
  return s + " algo=" + (p.has_algo ? gemm_algo_hex(p.algo) : "heuristic");
}

namespace {

bool parse_u64(const std::string& text, uint64_t* v) {
  if (text.empty() || text.size() > 19 || text.find_first_not_of("0123456789") != std::string::npos) return false;
  *v = std::stoull(text);
  return true;
}

}  // namespace

Status parse_gemm_plan_text(const std::string& text, GemmPlan* out) {
  std::map<std::string, std::string> words;
  std::istringstream in(text);
  for (std::string w; in >> w;) {
    const size_t eq = w.find('=');
    if (eq == std::string::npos || eq == 0) return invalid("GEMM plan word '" + w + "' is not key=value");
    words[w.substr(0, eq)] = w.substr(eq + 1);
  }
  for (const char* key : {"ep", "res", "shape", "bt", "dtype", "ws", "cublaslt", "algo"})
    if (!words.count(key)) return invalid(std::string("GEMM plan '") + text + "' lacks " + key + "=");
  GemmPlan p;
  if (!parse_gemm_epilogue(words["ep"], &p.epilogue))
    return invalid("GEMM plan epilogue '" + words["ep"] + "' is unknown; known: default relu bias relu_bias "
                   "gelu_tanh gelu_tanh_bias");
  p.residual = words["res"] == "1";
  p.tuned.b_transposed = words["bt"] == "1";
  auto dt = parse_dtype(words["dtype"]);
  if (!dt) return invalid("GEMM plan dtype '" + words["dtype"] + "' is not f32, f16 or bf16");
  p.tuned.dtype = *dt;
  uint64_t v[3] = {};
  std::string shape = words["shape"];
  for (int i = 0; i < 3; ++i) {
    const size_t x = shape.find('x');
    if (!parse_u64(shape.substr(0, x), &v[i]) || (i < 2) != (x != std::string::npos))
      return invalid("GEMM plan shape '" + words["shape"] + "' is not MxNxK");
    shape = x == std::string::npos ? "" : shape.substr(x + 1);
  }
  p.tuned.m = static_cast<int64_t>(v[0]);
  p.tuned.n = static_cast<int64_t>(v[1]);
  p.tuned.k = static_cast<int64_t>(v[2]);
  uint64_t ws = 0, version = 0;
  if (!parse_u64(words["ws"], &ws)) return invalid("GEMM plan workspace '" + words["ws"] + "' is not a byte count");
  if (!parse_u64(words["cublaslt"], &version))
    return invalid("GEMM plan cuBLASLt version '" + words["cublaslt"] + "' is not a number");
  p.workspace_bytes = ws;
  p.cublaslt_version = version;
  if (words["algo"] != "heuristic") {
    Status st = parse_gemm_algo_hex(words["algo"], &p.algo);
    if (!st.ok()) return st;
    p.has_algo = true;
  }
  *out = p;
  return Status();
}

Status check_gemm_call(const GemmShape& s, const GemmPlan& plan, const GemmOperands& ops) {
  const int64_t dims[3] = {s.m, s.n, s.k};
  const char* names[3] = {"M", "N", "K"};
  for (int i = 0; i < 3; ++i) {
    if (dims[i] < 1)
      return invalid(std::string("GEMM ") + names[i] + " = " + std::to_string(dims[i]) +
                     "; every extent must be at least 1 (an empty product has nothing to launch)");
    if (dims[i] > INT32_MAX)
      return invalid(std::string("GEMM ") + names[i] + " = " + std::to_string(dims[i]) +
                     " exceeds cuBLASLt's 2^31 - 1 leading dimension; split the call");
  }
  const size_t eb = dtype_bytes(s.dtype);
  Status st;
  if (!(st = check_row("A", s.k, eb)).ok()) return st;
  if (!(st = check_row("B", s.b_transposed ? s.k : s.n, eb)).ok()) return st;
  if (!(st = check_row("out", s.n, eb)).ok()) return st;
  if (!(st = check_pointer("A", ops.a)).ok()) return st;
  if (!(st = check_pointer("B", ops.b)).ok()) return st;
  if (!(st = check_pointer("out", ops.out)).ok()) return st;
  if (gemm_epilogue_has_bias(plan.epilogue)) {
    if (!(st = check_pointer("bias", ops.bias)).ok()) return st;
  } else if (ops.bias != 0) {
    return invalid(std::string("GEMM entry with epilogue '") + gemm_epilogue_name(plan.epilogue) +
                   "' takes no bias; pass a null bias pointer");
  }
  if (plan.residual) {
    if (!(st = check_pointer("residual", ops.residual)).ok()) return st;
  } else if (ops.residual != 0) {
    return invalid("GEMM entry takes no residual; pass a null residual pointer");
  }
  return Status();
}

}  // namespace fusekit
