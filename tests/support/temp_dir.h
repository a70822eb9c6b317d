// Fresh temporary folders for tests: one per test (TempDirTest) or one per
// suite (make_temp_dir from SetUpTestSuite), named after the process and the
// test so that parallel test programs never share one.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

namespace fusekit::testing {

// An empty folder under the system's temp folder: fusekit_<prefix>_<pid>,
// then _<test name> when a test is running ('/' of parameterized names made
// '_'). Whatever stood there before is removed.
inline std::filesystem::path make_temp_dir(const std::string& prefix) {
  std::string name = "fusekit_" + prefix + "_" + std::to_string(getpid());
  if (const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info())
    name += std::string("_") + test->name();
  for (char& c : name)
    if (c == '/') c = '_';
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// A fixture whose every test gets its own empty folder dir_, removed after it.
class TempDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = make_temp_dir(::testing::UnitTest::GetInstance()->current_test_info()->test_suite_name());
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  // The path of `name` inside the test's folder.
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::filesystem::path dir_;
};

}  // namespace fusekit::testing
