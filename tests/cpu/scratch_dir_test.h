// A fixture whose tests each get a fresh folder under the system's temporary folder,
// removed afterwards even when a test left it unwritable.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <random>
#include <string>
#include <system_error>
#include <utility>

namespace gpuvs_test {

class ScratchDirTest : public ::testing::Test {
 protected:
  explicit ScratchDirTest(std::string prefix) : prefix_(std::move(prefix)) {}
  void SetUp() override {
    std::random_device rd;
    dir_ = std::filesystem::temp_directory_path() /
           (prefix_ + "_" + std::to_string(::getpid()) + "_" + std::to_string(rd()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::permissions(dir_, std::filesystem::perms::owner_all,
                                 std::filesystem::perm_options::add, ec);
    std::filesystem::remove_all(dir_, ec);
  }
  std::filesystem::path dir_;

 private:
  std::string prefix_;
};

}  // namespace gpuvs_test
