#include "generator/build/artifact_json.h"

#include "common/errors.h"

namespace fusekit {

namespace {
constexpr char kB64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

KernelParam::Kind kind_from(const std::string& s) {
  for (auto k : {KernelParam::Kind::kInput, KernelParam::Kind::kOutput, KernelParam::Kind::kScalarParam,
                 KernelParam::Kind::kShape})
    if (s == param_kind_name(k)) return k;
  throw UserError("artifact: unknown parameter kind '" + s + "'");
}
KernelParam::Type type_from(const std::string& s) {
  for (auto t : {KernelParam::Type::kPtr, KernelParam::Type::kBool, KernelParam::Type::kI32, KernelParam::Type::kI64, KernelParam::Type::kF32})
    if (s == param_type_name(t)) return t;
  throw UserError("artifact: unknown parameter type '" + s + "'");
}
LaunchExpr expr_from(const std::string& s) {
  LaunchExpr e;
  Status st = LaunchExpr::parse(s, &e);
  if (!st.ok()) throw UserError("artifact: " + st.message());
  return e;
}
}  // namespace

std::string base64_encode(const std::string& in) {
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8) | uint8_t(in[i + 2]);
    for (int s = 18; s >= 0; s -= 6) out += kB64[(v >> s) & 63];
  }
  if (i < in.size()) {
    uint32_t v = uint8_t(in[i]) << 16;
    if (i + 1 < in.size()) v |= uint8_t(in[i + 1]) << 8;
    out += kB64[(v >> 18) & 63];
    out += kB64[(v >> 12) & 63];
    out += i + 1 < in.size() ? kB64[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::string base64_decode(const std::string& in) {
  if (in.size() % 4 != 0) throw UserError("base64 text length is not a multiple of 4");
  std::string out;
  out.reserve(in.size() / 4 * 3);
  for (size_t i = 0; i < in.size(); i += 4) {
    uint32_t v = 0;
    int pad = 0;
    for (int k = 0; k < 4; ++k) {
      char c = in[i + k];
      const char* p = c == '=' ? nullptr : std::strchr(kB64, c);
      if (c == '=') { ++pad; v <<= 6; continue; }
      if (!p || !c || pad) throw UserError("invalid base64 character");
      v = (v << 6) | static_cast<uint32_t>(p - kB64);
    }
    out += static_cast<char>((v >> 16) & 0xff);
    if (pad < 2) out += static_cast<char>((v >> 8) & 0xff);
    if (pad < 1) out += static_cast<char>(v & 0xff);
  }
  return out;
}

nlohmann::json artifact_to_json(const KernelArtifact& a) {
  nlohmann::json j;
  j["backend"] = a.backend;
  j["image_kind"] = image_kind_name(a.image_kind);
  j["image_base64"] = base64_encode(a.image);
  j["entry"] = a.entry;
  j["target_sm"] = a.target_sm;
  j["block"] = {a.block[0], a.block[1], a.block[2]};
  j["grid"] = {a.grid[0].to_string(), a.grid[1].to_string(), a.grid[2].to_string()};
  j["shared_bytes"] = a.shared_bytes;
  j["pointer_alignment"] = a.pointer_alignment;
  if (a.row_length > 0) j["row_length"] = a.row_length;
  if (a.row_multiple > 1) j["row_multiple"] = a.row_multiple;
  j["params"] = nlohmann::json::array();
  for (const auto& p : a.params)
    j["params"].push_back({{"kind", param_kind_name(p.kind)}, {"type", param_type_name(p.type)},
                           {"index", p.index}, {"expr", p.expr.to_string()}});
  return j;
}

KernelArtifact artifact_from_json(const nlohmann::json& j) {
  try {
    KernelArtifact a;
    a.backend = j.at("backend").get<std::string>();
    const std::string kind = j.at("image_kind").get<std::string>();
    if (kind != "cubin" && kind != "ptx") throw UserError("artifact: unknown image kind '" + kind + "'");
    a.image_kind = kind == "cubin" ? ImageKind::kCubin : ImageKind::kPtx;
    a.image = base64_decode(j.at("image_base64").get<std::string>());
    a.source = a.image_kind == ImageKind::kPtx ? a.image : "";
    a.entry = j.at("entry").get<std::string>();
    a.target_sm = j.at("target_sm").get<int>();
    for (int i = 0; i < 3; ++i) {
      a.block[i] = j.at("block").at(i).get<int>();
      a.grid[i] = expr_from(j.at("grid").at(i).get<std::string>());
    }
    a.shared_bytes = j.at("shared_bytes").get<int>();
    a.pointer_alignment = j.at("pointer_alignment").get<int>();
    a.row_length = j.value("row_length", int64_t{0});
    a.row_multiple = j.value("row_multiple", 1);
    for (const auto& p : j.at("params")) {
      KernelParam k;
      k.kind = kind_from(p.at("kind").get<std::string>());
      k.type = type_from(p.at("type").get<std::string>());
      k.index = p.at("index").get<int>();
      k.expr = expr_from(p.at("expr").get<std::string>());
      a.params.push_back(k);
    }
    return a;
  } catch (const nlohmann::json::exception& e) {
    throw UserError(std::string("artifact: malformed JSON: ") + e.what());
  }
}

}  // namespace fusekit
