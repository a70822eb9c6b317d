// JSON-lines export and import of tuning records, plain or gzip-compressed
// (committed runs are kept as .jsonl.gz; zlib reads a plain file as it is).
#include <zlib.h>

#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <type_traits>

#include "common/errors.h"
#include "tunedb/tune_db.h"

namespace fusekit {
namespace {

bool ends_with_gz(const std::string& path) { return path.size() >= 3 && path.compare(path.size() - 3, 3, ".gz") == 0; }

struct GzCloser {
  void operator()(gzFile f) const { gzclose(f); }
};
using GzFile = std::unique_ptr<std::remove_pointer_t<gzFile>, GzCloser>;

}  // namespace

size_t export_jsonl(const TuneDb& db, const std::string& path) { return write_jsonl(db.all(), path); }

size_t write_jsonl(const std::vector<TuningRecord>& records, const std::string& path) {
  const std::string cannot = "cannot write '" + path + "'; check the directory exists and is writable";
  const std::string failed = "error writing '" + path + "'";
  if (ends_with_gz(path)) {
    GzFile out(gzopen(path.c_str(), "wb9"));
    if (!out) throw UserError(cannot);
    for (const auto& r : records) {
      const std::string line = nlohmann::json(r).dump() + '\n';
      if (gzwrite(out.get(), line.data(), static_cast<unsigned>(line.size())) != static_cast<int>(line.size()))
        throw UserError(failed);
    }
    if (gzclose(out.release()) != Z_OK) throw UserError(failed);
    return records.size();
  }
  std::ofstream out(path);
  if (!out) throw UserError(cannot);
  for (const auto& r : records) out << nlohmann::json(r).dump() << '\n';
  if (!out) throw UserError(failed);
  return records.size();
}

std::vector<TuningRecord> read_jsonl(const std::string& path, std::vector<size_t>* lines) {
  GzFile in(gzopen(path.c_str(), "rb"));
  if (!in) throw UserError("cannot read '" + path + "'; check the path");
  std::string text;
  char buf[1 << 16];
  int got = 0;
  while ((got = gzread(in.get(), buf, sizeof(buf))) > 0) text.append(buf, static_cast<size_t>(got));
  if (got < 0) {
    int code = 0;
    throw UserError("cannot read '" + path + "': " + gzerror(in.get(), &code) + " (a truncated or corrupt .gz?)");
  }
  // zlib hands out what a cut gzip stream held and flags the missing end
  // (deflate's last block or the trailer) only in gzerror.
  int code = Z_OK;
  gzerror(in.get(), &code);
  if (code == Z_BUF_ERROR || (!gzdirect(in.get()) && !gzeof(in.get())))
    throw UserError("'" + path + "' is a truncated gzip file (its end or trailer is missing); export it again");
  std::vector<TuningRecord> records;
  size_t lineno = 0;
  for (size_t begin = 0; begin < text.size();) {
    size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(begin, end - begin);
    begin = end + 1;
    ++lineno;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    try {
      records.push_back(nlohmann::json::parse(line).get<TuningRecord>());
      upgrade_record(&records.back());
      if (lines) lines->push_back(lineno);
    } catch (const nlohmann::json::exception& e) {
      throw UserError(path + ":" + std::to_string(lineno) + ": not a JSON record: " + e.what());
    } catch (const UserError& e) {
      throw UserError(path + ":" + std::to_string(lineno) + ": " + e.what());
    }
  }
  return records;
}

size_t import_jsonl(TuneDb& db, const std::string& path) { return db.commit(read_jsonl(path)); }

}  // namespace fusekit
