#include "fusekit/kernel_artifact.h"

namespace fusekit {

const char* image_kind_name(ImageKind kind) { return kind == ImageKind::kCubin ? "cubin" : "ptx"; }

size_t KernelParam::size_bytes() const {
  switch (type) {
    case Type::kPtr: return sizeof(void*);
    case Type::kBool: return 1;
    case Type::kI32: return 4;
    case Type::kI64: return 8;
    case Type::kF32: return 4;
  }
  return 8;
}

const char* param_kind_name(KernelParam::Kind kind) {
  switch (kind) {
    case KernelParam::Kind::kInput: return "input";
    case KernelParam::Kind::kOutput: return "output";
    case KernelParam::Kind::kScalarParam: return "param";
    case KernelParam::Kind::kShape: return "shape";
  }
  return "?";
}

const char* param_type_name(KernelParam::Type type) {
  switch (type) {
    case KernelParam::Type::kPtr: return "ptr";
    case KernelParam::Type::kBool: return "bool";
    case KernelParam::Type::kI32: return "i32";
    case KernelParam::Type::kI64: return "i64";
    case KernelParam::Type::kF32: return "f32";
  }
  return "?";
}

}  // namespace fusekit
