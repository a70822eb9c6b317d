// `fusekit model train|eval` and `tune --search guided`, end to end on the
// small committed H200 slice (tests/data/h200_cost_model_sample.jsonl.gz).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "tests/cli/run_command.h"
#include "tests/support/temp_dir.h"
#include "tunedb/tune_db.h"

namespace fusekit {
namespace {

using testing::run_command;

const std::string kSample = std::string(FUSEKIT_SOURCE_DIR) + "/tests/data/h200_cost_model_sample.jsonl.gz";

class ModelCli : public testing::TempDirTest {
 protected:
  testing::CommandResult fusekit(const std::string& args) const {
    return run_command(std::string(FUSEKIT_BINARY) + " " + args);
  }
};

TEST_F(ModelCli, TrainsBesideTheDatabaseAndGuidesAModeledTune) {
  const std::string db = path("h200.db");
  ASSERT_EQ(fusekit("db import --db " + db + " " + kSample).code, 0);
  const auto train = fusekit("model train --rounds 30 --db " + db);
  ASSERT_EQ(train.code, 0) << train.out;
  EXPECT_NE(train.out.find("576 measured records"), std::string::npos) << train.out;
  std::ifstream saved(db + ".cost-model.json");
  ASSERT_TRUE(saved.good());
  const nlohmann::json j = nlohmann::json::parse(saved);
  EXPECT_EQ(j["training_records"], 576);
  EXPECT_EQ(j["archs"], nlohmann::json::array({"sm_90"}));
  EXPECT_EQ(j["gpus"], nlohmann::json::array({"NVIDIA H200"}));
  EXPECT_EQ(j["domains"], nlohmann::json::array({"nvrtc pointwise", "nvrtc rows"}));
  EXPECT_FALSE(j["xgboost_version"].get<std::string>().empty());

  // No GPU here: the guided search ranks the whole space with the model
  // beside the database and records the batches it proposes.
  const std::string out = path("tuned.db");
  const auto tune = fusekit("tune --arch sm_90 --pattern relu_add --dtype f32 --sizes 65536 --backend nvrtc "
                            "--search guided --cost-model " + db + ".cost-model.json --db " + out);
  ASSERT_EQ(tune.code, 0) << tune.out;
  EXPECT_NE(tune.out.find("ranking with the learned model"), std::string::npos) << tune.out;
  EXPECT_NE(tune.out.find("records of nvrtc pointwise, nvrtc rows, the analytic model predicts the rest"),
            std::string::npos)
      << tune.out;
  const auto records = open_sqlite_db_read_only(out)->all();
  EXPECT_EQ(records.size(), 4u) << "two batches of the shape's favourite (the first among the seeds) and a "
                                   "random pick, then the shape retires (modeled times are no measured gain)";
  for (const auto& r : records) {
    EXPECT_EQ(r.status, RecordStatus::kModeled);
    EXPECT_EQ(r.gpu_name.rfind("model:learned ", 0), 0u) << r.gpu_name;
  }
}

TEST_F(ModelCli, TrainsWithoutAGpusRecords) {
  // The sample again as an H100's (ids of their own): a database of two GPUs.
  const std::string h100 = path("h100.jsonl");
  const auto copy = run_command("zcat " + kSample + " | sed -e 's/\"gpu_name\":\"NVIDIA H200\"/\"gpu_name\":\"NVIDIA H100 80GB "
                                "HBM3\"/' -e 's/\"id\":\"..../\"id\":\"ffff/' > " + h100);
  ASSERT_EQ(copy.code, 0) << copy.out;
  const std::string db = path("two.db");
  ASSERT_EQ(fusekit("db import --db " + db + " " + kSample + " " + h100).code, 0);
  const std::string model = path("no-h100.json");
  const auto train =
      fusekit("model train --rounds 5 --members 1 --hold-out-gpu 'NVIDIA H100 80GB HBM3' --db " + db + " --out " + model);
  ASSERT_EQ(train.code, 0) << train.out;
  std::ifstream saved(model);
  ASSERT_TRUE(saved.good());
  EXPECT_EQ(nlohmann::json::parse(saved)["gpus"], nlohmann::json::array({"NVIDIA H200"}));

  const auto typo = fusekit("model train --hold-out-gpu 'NVIDIA A100' --db " + db);
  EXPECT_EQ(typo.code, 2) << typo.out;
  EXPECT_NE(typo.out.find("--hold-out-gpu 'NVIDIA A100': the database has no measured records of that GPU; it has "
                          "records of NVIDIA H100 80GB HBM3, NVIDIA H200"),
            std::string::npos)
      << typo.out;
  const auto all = fusekit("model train --hold-out-gpu 'NVIDIA H100 80GB HBM3,NVIDIA H200' --db " + db);
  EXPECT_EQ(all.code, 2) << all.out;
  EXPECT_NE(all.out.find("leave none of the database's records to train on"), std::string::npos) << all.out;
}

TEST_F(ModelCli, BadInputNamesTheValue) {
  const std::string db = path("h200.db");
  ASSERT_EQ(fusekit("db import --db " + db + " " + kSample).code, 0);
  const std::pair<std::string, std::string> cases[] = {
      {"model --db " + db, "model takes one action, train or eval"},
      {"model fit --db " + db, "got 'fit'"},
      {"model train --db " + path("none.db"), "no database at"},
      {"model train --rounds 0 --db " + db, "--rounds 0 must be at least 1"},
      {"model train --objective huber --db " + db, "--objective 'huber': expected time, relative, pairwise or ndcg"},
      {"model train --eta 0 --db " + db, "expected a rate in (0, 1]"},
      {"model eval --holdouts op --db " + db, "--holdouts 'op': expected workload, shape and/or gpu"},
      {"tune --arch sm_90 --pattern relu_add --search beam --db " + db, "--search 'beam' is not a search"},
      {"tune --arch sm_90 --pattern relu_add --cost-model " + path("none.json") + " --db " + db, "no cost model at"},
  };
  for (const auto& [args, message] : cases) {
    const auto r = fusekit(args);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.out;
    EXPECT_NE(r.out.find(message), std::string::npos) << args << "\n" << r.out;
  }
  // A pruned result is the search's own feedback, never a record.
  std::string line;
  {
    const auto r = run_command("zcat " + kSample + " | head -1");
    line = r.out;
  }
  const std::string pruned = path("pruned.jsonl");
  std::ofstream(pruned) << std::regex_replace(line, std::regex("\"status\":\"ok\""), "\"status\":\"pruned\"");
  const auto imported = fusekit("db import --db " + path("p.db") + " " + pruned);
  EXPECT_EQ(imported.code, 2) << imported.out;
  EXPECT_NE(imported.out.find("field 'status' is 'pruned'"), std::string::npos) << imported.out;
  const std::string empty = path("empty.db");
  ASSERT_EQ(fusekit("tune --arch sm_80 --pattern relu_add --sizes 4096 --budget 1 --backend nvrtc --db " + empty).code, 0);
  const auto none = fusekit("model train --db " + empty);
  EXPECT_EQ(none.code, 2);
  EXPECT_NE(none.out.find("no verified measurements"), std::string::npos) << none.out;
}

}  // namespace
}  // namespace fusekit
