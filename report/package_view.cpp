// package_view: the manifest's variants as a runtime table, and the runtime's
// select_variant over it for sample calls (the steps fusekit_explain reports).
#include "report/package_view.h"

#include <algorithm>
#include <fstream>
#include <set>

#include "common/errors.h"
#include "fusekit/arch.h"
#include "fusekit/package.h"
#include "fusekit/shape_bucket.h"

namespace fusekit {
namespace {

using nlohmann::json;

// A variant's strings, kept alive while the table points into them.
struct VariantText {
  std::string op, entry, backend, schedule, record_id, arch, bucket;
};

std::string field(const json& v, const char* name, size_t index, const std::string& path) {
  if (!v.contains(name) || !v[name].is_string())
    throw UserError(path + ": variant " + std::to_string(index) + " has no text field \"" + name +
                    "\"; rebuild the package with `fusekit build`");
  return v[name].get<std::string>();
}

fusekit_variant_desc desc_of(const json& v, const VariantText& t, size_t index, const std::string& path) {
  fusekit_variant_desc d{};
  d.op = t.op.c_str();
  auto dtype = parse_dtype(field(v, "dtype", index, path));
  if (!dtype) throw UserError(path + ": variant " + std::to_string(index) + " has an unknown dtype");
  d.dtype = static_cast<int>(*dtype);
  int b = -1, rb = -1;
  if (t.bucket != "generic" && !parse_shape_bucket(t.bucket, &b, &rb))
    throw UserError(path + ": variant " + std::to_string(index) + " has an unknown shape bucket '" + t.bucket + "'");
  d.bucket_log2 = b;
  d.row_log2 = rb;
  auto arch = parse_arch(t.arch);
  d.sm = arch ? arch->number() : 0;  // "ptx (compute_75)": the portable PTX
  d.image_kind = field(v, "image", index, path) == "ptx" ? 1 : 0;
  d.entry = t.entry.c_str();
  d.backend = t.backend.c_str();
  d.schedule = t.schedule.c_str();
  d.record_id = t.record_id.c_str();
  d.measured = v.value("provenance", "") == "measured";
  d.index32 = t.backend == "halide";
  d.pointer_alignment = v.value("pointer_alignment", 0);
  d.row_length = v.contains("row_length") && v["row_length"].is_number() ? v["row_length"].get<int>() : 0;
  d.row_multiple = v.value("row_multiple", 0);
  return d;
}

// One sample call through select_variant.
json explain_call(const std::vector<fusekit_variant_desc>& table, const std::string& op, DType dtype, int sm,
                  int64_t elements, int64_t row_length, int alignment) {
  DeviceProps device;
  device.sm = sm;
  Selection s;
  Status st = select_variant(table.data(), table.size(), op.c_str(), dtype, device, elements, row_length, alignment, &s);
  json j = {{"op", op},           {"dtype", dtype_name(dtype)}, {"device", "sm_" + std::to_string(sm)},
            {"elements", elements}, {"row_length", row_length}, {"alignment", alignment}};
  if (!st.ok()) {
    j["status"] = st.message();
    return j;
  }
  const fusekit_variant_desc& v = *s.variant;
  j["status"] = "ok";
  j["arch_step"] = s.arch_step;
  j["shape_step"] = s.shape_step;
  j["variant"] = {{"entry", v.entry}, {"backend", v.backend}, {"params", v.schedule},
                  {"arch", v.sm ? "sm_" + std::to_string(v.sm) : "ptx"},
                  {"bucket", v.bucket_log2 >= 0 ? shape_bucket_name(int64_t{1} << v.bucket_log2,
                                                                    v.row_log2 >= 0 ? int64_t{1} << v.row_log2 : -1)
                                                : "generic"}};
  return j;
}

// An arch the package was not built for, to show where such a GPU lands.
int unbuilt_sm(const std::set<int>& built) {
  for (int sm : {89, 86, 80, 75})
    if (!built.count(sm)) return sm;
  return 70;
}

// The calls shown per op and dtype: the top of a few of its buckets, one
// past the largest, and the smallest again with misaligned pointers.
json ladder_for(const std::vector<fusekit_variant_desc>& table, const std::string& op, DType dtype,
                const std::set<int>& sms) {
  std::set<std::pair<int, int>> buckets;
  for (const auto& v : table)
    if (op == v.op && v.dtype == static_cast<int>(dtype) && v.bucket_log2 >= 0) buckets.insert({v.bucket_log2, v.row_log2});
  std::vector<std::pair<int, int>> picks(buckets.begin(), buckets.end());
  if (picks.size() > 3) picks = {picks.front(), picks[picks.size() / 2], picks.back()};
  if (picks.empty()) picks.push_back({12, -1});
  std::vector<std::pair<std::pair<int, int>, int>> calls;
  for (const auto& p : picks) calls.push_back({p, 256});
  calls.push_back({{picks.back().first + 2, picks.back().second}, 256});
  calls.push_back({picks.front(), static_cast<int>(dtype_bytes(dtype))});
  json out = json::array();
  for (int sm : sms)
    for (const auto& [b, alignment] : calls)
      out.push_back(explain_call(table, op, dtype, sm, int64_t{1} << b.first,
                                 b.second >= 0 ? int64_t{1} << b.second : -1, alignment));
  return out;
}

}  // namespace

nlohmann::json read_package_manifest(const std::string& dir) {
  const std::string path = dir + "/share/fusekit_kernels/manifest.json";
  std::ifstream f(path);
  if (!f)
    throw UserError("'" + dir + "' is not a fusekit package (no share/fusekit_kernels/manifest.json); pass --package "
                    "with the folder `fusekit build --out` wrote");
  json m = json::parse(f, nullptr, false);
  if (m.is_discarded() || !m.is_object() || m.value("generator", "") != "fusekit build" ||
      !m.contains("variants") || !m["variants"].is_array())
    throw UserError(path + " is not a manifest `fusekit build` wrote; pass --package with the folder "
                    "`fusekit build --out` wrote");
  return m;
}

nlohmann::json package_view(const nlohmann::json& manifest, const std::string& dir) {
  const std::string path = dir + "/share/fusekit_kernels/manifest.json";
  const json& variants = manifest["variants"];
  std::vector<VariantText> texts(variants.size());
  std::vector<fusekit_variant_desc> table;
  json rows = json::array();
  for (size_t i = 0; i < variants.size(); ++i) {
    const json& v = variants[i];
    if (!v.is_object()) throw UserError(path + ": variant " + std::to_string(i) + " is not an object");
    texts[i] = {field(v, "op", i, path),     field(v, "entry", i, path),     field(v, "backend", i, path),
                field(v, "params", i, path), v.value("record_id", ""),        field(v, "arch", i, path),
                field(v, "shape_bucket", i, path)};
    table.push_back(desc_of(v, texts[i], i, path));
    rows.push_back({{"op", texts[i].op}, {"dtype", v["dtype"]}, {"arch", texts[i].arch},
                    {"bucket", texts[i].bucket}, {"backend", texts[i].backend}, {"params", texts[i].schedule},
                    {"provenance", v.value("provenance", "")}, {"measured_on", v.value("measured_on", "")},
                    {"record_id", texts[i].record_id}, {"row_length", v.value("row_length", json("any"))}});
  }
  std::set<int> sms;
  for (const auto& d : table)
    if (d.sm) sms.insert(d.sm);
  sms.insert(unbuilt_sm(sms));
  std::set<std::pair<std::string, int>> ops;
  for (const auto& d : table) ops.insert({d.op, d.dtype});
  json ladder = json::array();
  for (const auto& [op, dt] : ops)
    for (json& call : ladder_for(table, op, static_cast<DType>(dt), sms)) ladder.push_back(std::move(call));
  return {{"dir", dir},
          {"archs", manifest.value("archs", json::array())},
          {"variants", rows},
          {"notes", manifest.value("notes", json::array())},
          {"ladder", ladder}};
}

}  // namespace fusekit
