// A seeded fuzzer of `db import`'s input: valid records mutated field by
// field (types swapped, values out of range, fields dropped, bytes flipped,
// lines cut) must each be read and checked with a UserError or a verdict,
// never another exception; a sample goes through the real binary, which
// must exit 0, 1 or 2.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>

#include <nlohmann/json.hpp>

#include "cli/record_checks.h"
#include "common/errors.h"
#include "tests/cli/run_command.h"
#include "tests/support/sample_record.h"
#include "tests/support/temp_dir.h"
#include "tunedb/tune_db.h"

namespace fusekit {
namespace {

using nlohmann::json;

// A record that import accepts, its median drawn from `rng`.
TuningRecord valid_record(std::mt19937_64& rng) {
  return testing::sample_record("nvrtc", 1.0 + static_cast<double>(rng() % 1000) / 10);
}

// One mutation of a record's JSON text.
std::string mutate(const json& base, std::mt19937_64& rng) {
  json j = base;
  std::vector<std::string> keys;
  for (auto it = j.begin(); it != j.end(); ++it) keys.push_back(it.key());
  const std::string key = keys[rng() % keys.size()];
  const json odd[] = {nullptr, -1, 0, 1e308, -1e308, "999999999999999999999999999999", 1.5, "", "sm_999", "f64",
                      "x\"y\\z\n", json::array(), json::object(), true, 2147483648LL, -2147483649LL,
                      std::string(5000, 'a'), "n<=2^99", "nan", "ok", "timeout", "fault", "threads=-1"};
  std::string text;
  switch (rng() % 6) {
    case 0: j[key] = odd[rng() % (sizeof(odd) / sizeof(odd[0]))]; text = j.dump(); break;
    case 1: j.erase(key); text = j.dump(); break;
    case 2: j[key] = odd[rng() % (sizeof(odd) / sizeof(odd[0]))];
            j[keys[rng() % keys.size()]] = odd[rng() % (sizeof(odd) / sizeof(odd[0]))];
            text = j.dump(); break;
    case 3: text = j.dump(); text.resize(rng() % text.size()); break;
    case 4: text = j.dump(); for (int k = 0; k < 3; ++k) text[rng() % text.size()] = static_cast<char>(rng() % 256); break;
    default: text = "[" + j.dump() + "]"; break;
  }
  return text;
}

class ImportFuzz : public testing::TempDirTest {
 protected:
  std::string write(const std::string& text) const {
    const std::string p = (dir_ / "case.jsonl").string();
    std::ofstream(p) << text << "\n";
    return p;
  }
};

TEST_F(ImportFuzz, MutatedRecordsAreReadOrRefusedNeverCrash) {
  std::mt19937_64 rng(20261201);
  int refused = 0, accepted = 0, flagged = 0;
  for (int i = 0; i < 1500; ++i) {
    const std::string text = mutate(json(valid_record(rng)), rng);
    const std::string path = write(text);
    SCOPED_TRACE(text.substr(0, 300));
    try {
      for (const auto& r : read_jsonl(path)) (record_violation(r).empty() ? accepted : flagged)++;
    } catch (const UserError& e) {
      ++refused;
      EXPECT_NE(std::string(e.what()).find("case.jsonl"), std::string::npos) << e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "not a UserError: " << e.what();
    }
  }
  // Mutations of every kind happened: some refused on reading, some by the checks.
  EXPECT_GT(refused, 100);
  EXPECT_GT(flagged, 30);
  EXPECT_GT(accepted, 10);
}

TEST_F(ImportFuzz, TheBinaryExitsZeroOneOrTwoOnMutatedFiles) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 25; ++i) {
    std::string text;
    for (int k = 0; k < 3; ++k) text += (k ? "\n" : "") + mutate(json(valid_record(rng)), rng);
    const std::string path = write(text);
    const auto r = testing::run_command(std::string(FUSEKIT_BINARY) + " db import --db " + (dir_ / "f.db").string() +
                                        " " + path);
    EXPECT_TRUE(r.code == 0 || r.code == 1 || r.code == 2) << r.code << ": " << r.out << "\n" << text;
    EXPECT_EQ(r.out.find("internal error"), std::string::npos) << r.out;
  }
}

}  // namespace
}  // namespace fusekit
