// JSON-lines export and import of tuning records.
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/errors.h"
#include "tunedb/tune_db.h"

namespace fusekit {

size_t export_jsonl(const TuneDb& db, const std::string& path) {
  std::ofstream out(path);
  if (!out) throw UserError("cannot write '" + path + "'; check the directory exists and is writable");
  size_t n = 0;
  for (const auto& r : db.all()) {
    out << nlohmann::json(r).dump() << '\n';
    ++n;
  }
  if (!out) throw UserError("error writing '" + path + "'");
  return n;
}

size_t import_jsonl(TuneDb& db, const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UserError("cannot read '" + path + "'; check the path");
  std::vector<TuningRecord> records;
  std::string line;
  size_t lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    try {
      records.push_back(nlohmann::json::parse(line).get<TuningRecord>());
      upgrade_record(&records.back());
    } catch (const nlohmann::json::exception& e) {
      throw UserError(path + ":" + std::to_string(lineno) + ": not a JSON record: " + e.what());
    } catch (const UserError& e) {
      throw UserError(path + ":" + std::to_string(lineno) + ": " + e.what());
    }
  }
  return db.commit(records);
}

}  // namespace fusekit
