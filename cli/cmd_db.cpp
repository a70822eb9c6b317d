#include "cli/cmd_db.h"

#include <unistd.h>

#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>

#include "cli/record_checks.h"
#include "cli/cmd_db_sync.h"
#include "common/errors.h"
#include "schedules/arch_limits.h"
#include "tunedb/tune_db.h"

namespace fusekit {

po::options_description cmd_db_options() {
  po::options_description o("db options (fusekit db show|export FILE|import FILE...)");
  add_db_option(o);
  o.add_options()
      ("pattern", po::value<std::vector<std::string>>()->multitoken(), "`show`: only this pattern")
      ("arch", po::value<std::string>(), "`show`: only this arch");
  return o;
}

namespace {

// One file of an import, checked whole before anything is written.
struct ImportFile {
  std::string path;
  std::vector<TuningRecord> records;
  std::vector<size_t> lines;
};

ImportFile read_import_file(const std::string& path) {
  ImportFile f{path, {}, {}};
  f.records = read_jsonl(path, &f.lines);
  for (size_t i = 0; i < f.records.size(); ++i)
    if (std::string bad = record_violation(f.records[i]); !bad.empty())
      throw UserError(path + ":" + std::to_string(f.lines[i]) + ": record " + f.records[i].id + " refused: " + bad);
  return f;
}

// Imports every file named; each is read and checked before the database
// is opened (or created). A record whose id is already stored with other
// content is a conflict: reported with its line, not stored; exit 1.
int db_import(const std::string& path, const std::vector<std::string>& files) {
  for (const auto& file : files)
    if (access(file.c_str(), R_OK) != 0) throw UserError("cannot read '" + file + "'; check the path");
  std::vector<ImportFile> read;
  for (const auto& file : files) read.push_back(read_import_file(file));
  auto db = open_tune_db(path, OpenMode::kCreate);
  const size_t before = db->size();
  std::map<std::string, nlohmann::json> stored;
  for (const auto& r : db->all()) stored[r.id] = nlohmann::json(r);
  size_t conflicts = 0;
  for (const auto& f : read) {
    std::vector<TuningRecord> fresh;
    size_t duplicates = 0;
    std::vector<std::string> conflict_lines;
    for (size_t i = 0; i < f.records.size(); ++i) {
      const nlohmann::json j(f.records[i]);
      auto [it, inserted] = stored.emplace(f.records[i].id, j);
      if (inserted) {
        fresh.push_back(f.records[i]);
      } else if (it->second == j) {
        ++duplicates;
      } else {
        conflict_lines.push_back(f.path + ":" + std::to_string(f.lines[i]) + ": record " + f.records[i].id +
                                 " conflicts with the stored record of that id (other content); kept the stored one");
      }
    }
    const size_t added = db->commit(fresh);
    std::printf("%s: %zu imported, %zu already present, %zu conflicts\n", f.path.c_str(), added,
                duplicates + (fresh.size() - added), conflict_lines.size());
    for (const auto& c : conflict_lines) std::fprintf(stderr, "fusekit: %s\n", c.c_str());
    conflicts += conflict_lines.size();
  }
  std::printf("imported %zu new records into %s (%zu before, %zu after)\n", db->size() - before, mask_uri(path).c_str(), before,
              db->size());
  return conflicts ? 1 : 0;
}

int db_show(const po::variables_map& vm, const TuneDb& db) {
  RecordFilter f;
  if (vm.count("pattern")) {
    const auto patterns = split_list(vm["pattern"].as<std::vector<std::string>>());
    if (patterns.size() != 1) throw UserError("db show --pattern takes one pattern name, e.g. --pattern softmax");
    f.pattern = patterns.front();
  }
  if (vm.count("arch")) f.arch = require_arch(vm["arch"].as<std::string>()).arch.name();
  std::printf("%-22s %-4s %-12s %-6s %-7s %-13s %-48s %10s %10s %9s %s\n", "pattern", "dtype", "shape", "arch",
              "backend", "status", "params", "median_us", "p20-p80", "GB/s", "gpu");
  for (const auto& r : db.all(f)) {
    char spread[64];
    std::snprintf(spread, sizeof(spread), "%.2f-%.2f", r.p20_us, r.p80_us);
    std::printf("%-22s %-4s %-12s %-6s %-7s %-13s %-48s %10.2f %10s %9.1f %s\n", r.pattern.c_str(), r.dtype.c_str(),
                r.shape.c_str(), r.arch.c_str(), r.backend.c_str(), record_status_name(r.status), r.params.c_str(),
                r.median_us, spread, r.bandwidth_gbps, r.gpu_name.c_str());
  }
  std::printf("%zu records\n", db.size());
  return 0;
}

}  // namespace

int cmd_db(const po::variables_map& vm, const std::vector<std::string>& args) {
  if (args.empty()) throw UserError("db needs a subcommand: show, export, import or sync");
  const std::string& sub = args[0];
  if (sub == "sync") return cmd_db_sync(std::vector<std::string>(args.begin() + 1, args.end()));
  if (sub != "show" && sub != "export" && sub != "import")
    throw UserError("unknown db subcommand '" + sub + "'; known: show export import sync");
  if (sub != "show" && vm.count("pattern")) throw UserError("--pattern filters `db show` only");
  const std::string path = resolve_db_path(vm);
  if (sub == "import") {
    if (args.size() < 2) throw UserError("db import needs JSONL files: fusekit db import --db FILE RECORDS.jsonl...");
    return db_import(path, std::vector<std::string>(args.begin() + 1, args.end()));
  }
  if (sub == "export" && args.size() != 2)
    throw UserError("db export needs one JSONL file: fusekit db export --db FILE RECORDS.jsonl[.gz]");
  if (sub == "show" && args.size() != 1) throw UserError("db show takes no file, got '" + args[1] + "'");
  const std::string existing = existing_db_path(vm, "pass --db FILE or run tune first");
  auto db = open_tune_db(existing, OpenMode::kMustExist);
  if (sub == "export") {
    size_t n = export_jsonl(*db, args[1]);
    std::printf("exported %zu records to %s\n", n, args[1].c_str());
    return 0;
  }
  return db_show(vm, *db);
}

}  // namespace fusekit
