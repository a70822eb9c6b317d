#include "fusekit/gemm.h"

#include <cinttypes>
#include <cstdio>

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
