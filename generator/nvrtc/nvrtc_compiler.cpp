#include "generator/nvrtc/nvrtc_compiler.h"

#include <nvrtc.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <vector>

namespace fusekit {

namespace {

// The number before `unit` on the last line of `log` that has it, e.g.
// "ptxas info    : Used 56 registers, used 1 barriers, 128 bytes smem".
int last_count_before(const std::string& log, const std::string& unit) {
  int value = -1;
  for (size_t at = log.find(unit); at != std::string::npos; at = log.find(unit, at + 1)) {
    size_t begin = at;
    while (begin > 0 && log[begin - 1] == ' ') --begin;
    size_t digits = begin;
    while (digits > 0 && std::isdigit(static_cast<unsigned char>(log[digits - 1]))) --digits;
    if (digits < begin) value = std::stoi(log.substr(digits, begin - digits));
  }
  return value;
}

void read_ptxas_report(const std::string& log, NvrtcResult* out) {
  out->registers = last_count_before(log, "registers");
  if (out->registers < 0) return;  // no report: leave the rest unknown too
  out->static_shared_bytes = std::max(0, last_count_before(log, "bytes smem"));
  out->spill_store_bytes = std::max(0, last_count_before(log, "bytes spill stores"));
}

NvrtcResult compile(const std::string& source, const std::string& name, const std::string& gpu, bool fast_math,
                    bool ptx) {
  NvrtcResult out;
  nvrtcProgram prog = nullptr;
  nvrtcResult r = nvrtcCreateProgram(&prog, source.c_str(), (name + ".cu").c_str(), 0, nullptr, nullptr);
  if (r != NVRTC_SUCCESS) {
    out.log = std::string("nvrtcCreateProgram failed: ") + nvrtcGetErrorString(r);
    return out;
  }
  std::vector<const char*> opts = {gpu.c_str(), "-std=c++17", "--extra-device-vectorization"};
  if (!ptx) opts.push_back("--ptxas-options=-v");  // registers, shared memory, spills into the log
  if (fast_math) {
    opts.push_back("--use_fast_math");
    opts.push_back("-DFK_FAST=1");
  }
  r = nvrtcCompileProgram(prog, static_cast<int>(opts.size()), opts.data());
  size_t log_size = 0;
  nvrtcGetProgramLogSize(prog, &log_size);
  if (log_size > 1) {
    std::vector<char> log(log_size);
    nvrtcGetProgramLog(prog, log.data());
    out.log.assign(log.data());
  }
  if (r != NVRTC_SUCCESS) {
    out.log = std::string("nvrtcCompileProgram(") + name + ", " + gpu + ") failed: " + nvrtcGetErrorString(r) +
              (out.log.empty() ? "" : "\n" + out.log);
    nvrtcDestroyProgram(&prog);
    return out;
  }
  size_t size = 0;
  r = ptx ? nvrtcGetPTXSize(prog, &size) : nvrtcGetCUBINSize(prog, &size);
  if (r == NVRTC_SUCCESS && size > 0) {
    out.cubin.resize(size);
    r = ptx ? nvrtcGetPTX(prog, out.cubin.data()) : nvrtcGetCUBIN(prog, out.cubin.data());
  }
  if (r != NVRTC_SUCCESS || size == 0) {
    out.log = std::string(ptx ? "nvrtcGetPTX" : "nvrtcGetCUBIN") + " failed: " + nvrtcGetErrorString(r);
    out.cubin.clear();
  } else {
    if (ptx) while (!out.cubin.empty() && out.cubin.back() == '\0') out.cubin.pop_back();
    out.ok = true;
    if (!ptx) read_ptxas_report(out.log, &out);
  }
  nvrtcDestroyProgram(&prog);
  return out;
}

}  // namespace

NvrtcResult compile_cuda_to_cubin(const std::string& source, const std::string& name, const Arch& arch, bool fast_math) {
  return compile(source, name, "--gpu-architecture=sm_" + std::to_string(arch.number()), fast_math, false);
}

NvrtcResult compile_cuda_to_ptx(const std::string& source, const std::string& name, const Arch& virtual_arch,
                                bool fast_math) {
  return compile(source, name, "--gpu-architecture=compute_" + std::to_string(virtual_arch.number()), fast_math,
                 true);
}

std::string nvrtc_version() {
  int major = 0, minor = 0;
  if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) return "unknown";
  return std::to_string(major) + "." + std::to_string(minor);
}

int cubin_sm(const std::string& image) {
  // ELF64: magic at 0, e_flags at offset 48 (4 bytes, little endian).
  if (image.size() < 52 || std::memcmp(image.data(), "\x7f" "ELF", 4) != 0 || image[4] != 2) return 0;
  uint32_t flags = 0;
  std::memcpy(&flags, image.data() + 48, 4);
  return static_cast<int>((flags >> 8) & 0xff);
}

}  // namespace fusekit
