#include "cli/cmd_build_plan.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/cmd_plan.h"
#include "common/errors.h"
#include "generator/package/library_emitter.h"

namespace fusekit {

int cmd_build_plan(const boost::program_options::variables_map& vm, EmitOptions o) {
  const std::string plan_path = vm["plan"].as<std::string>();
  const graph::Plan plan = graph::read_plan_file(plan_path);
  if (plan.entries.empty()) throw UserError(plan_path + ": the plan has no entries to package");
  for (const auto& e : plan.entries) o.candidates.push_back(plan_candidate(e));
  const std::string path = vm.count("db") ? vm["db"].as<std::string>() : default_db_path();
  if (!is_postgres_uri(path) && access(path.c_str(), R_OK) != 0)
    throw UserError("no database at '" + path + "'; run `fusekit tune --plan " + plan_path + "` first");
  auto db = open_tune_db(path, OpenMode::kMustExist);
  for (const auto& c : o.candidates) {
    const DType dt = *parse_dtype(plan.entries[&c - o.candidates.data()].dtype);
    const std::string hash = pipeline_hash(canonical_pipeline_text(c, dt));
    RecordFilter f;
    f.dtype = dtype_name(dt);
    bool found = false;
    for (const auto& rec : db->all(f)) found |= rec.pipeline_hash == hash;
    if (!found)
      throw UserError("the database " + path + " has no records of plan entry '" + c.name + "'; run `fusekit tune --plan " +
                      plan_path + " --arch ...` first" +
                      (c.general ? " (a general layout: only the Halide backend builds it, so not with --backend nvrtc)"
                                 : ""));
  }
  EmitReport r = emit_library(*db, o);
  // The manifest carries the plan, so a package says which graph nodes each op replaces.
  const auto manifest_path = std::filesystem::path(o.out_dir) / "share" / "fusekit_kernels" / "manifest.json";
  nlohmann::ordered_json manifest = nlohmann::ordered_json::parse(std::ifstream(manifest_path));
  std::ifstream pf(plan_path);
  manifest["plan"] = nlohmann::ordered_json::parse(pf);
  std::ofstream(manifest_path) << manifest.dump(1) << "\n";
  std::filesystem::copy_file(plan_path, manifest_path.parent_path() / "plan.json",
                             std::filesystem::copy_options::overwrite_existing);
  for (const auto& n : r.notes) std::fprintf(stderr, "fusekit: note: %s\n", n.c_str());
  std::printf("wrote %s: %zu kernel variants of %zu plan entries for", o.out_dir.c_str(), r.variants, plan.entries.size());
  for (const auto& op : r.ops) std::printf(" [%s]", op.c_str());
  std::printf("\n");
  return 0;
}

}  // namespace fusekit
