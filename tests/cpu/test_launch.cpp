// Launch detection: rank, size and rendezvous from options and launcher variables.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "comm/launch.h"
#include "core/error.h"

namespace gpuvs::comm {
namespace {

EnvLookup env_of(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](std::string_view name) -> std::optional<std::string> {
    auto it = vars.find(std::string(name));
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

std::string usage_message(const LaunchRequest& r, const EnvLookup& env, bool mpi) {
  try {
    detect_launch(r, env, mpi);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

TEST(Launch, NothingSetMeansOneProcessDrivingEveryGpu) {
  const Launch l = detect_launch({}, env_of({}), true);
  EXPECT_EQ(l.mode, LaunchMode::kSingleProcess);
  EXPECT_EQ(l.world_size, 1);
  EXPECT_FALSE(l.multi_process());
  EXPECT_EQ(to_string(l.mode), "single-process");
}

TEST(Launch, OpenMpiVariablesWithMpiBuild) {
  const Launch l = detect_launch({},
                                 env_of({{"OMPI_COMM_WORLD_RANK", "1"},
                                         {"OMPI_COMM_WORLD_SIZE", "2"},
                                         {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}}),
                                 true);
  EXPECT_EQ(l.mode, LaunchMode::kMpi);
  EXPECT_EQ(l.rank, 1);
  EXPECT_EQ(l.world_size, 2);
  EXPECT_EQ(l.local_rank, 1);
  EXPECT_EQ(l.source, "Open MPI");
}

TEST(Launch, MpiRunOfOneRankIsSingleProcess) {
  const Launch l = detect_launch(
      {}, env_of({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "1"}}), true);
  EXPECT_EQ(l.mode, LaunchMode::kSingleProcess);
}

TEST(Launch, SlurmStepNotBatchScript) {
  // Inside an sbatch script (no srun step) one process runs even if NTASKS is 8.
  EXPECT_EQ(detect_launch({}, env_of({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "8"}}), true).mode,
            LaunchMode::kSingleProcess);
  const Launch l = detect_launch(
      {}, env_of({{"SLURM_PROCID", "3"}, {"SLURM_STEP_NUM_TASKS", "4"}, {"SLURM_LOCALID", "3"}}),
      true);
  EXPECT_EQ(l.mode, LaunchMode::kMpi);
  EXPECT_EQ(l.rank, 3);
  EXPECT_EQ(l.source, "Slurm");
}

TEST(Launch, OptionsWinOverLauncherAndNeedARendezvousWithoutMpi) {
  const auto env = env_of({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "4"}});
  const Launch l = detect_launch({1, 2, "file:/shared/gpuvs.rdv"}, env, false);
  EXPECT_EQ(l.mode, LaunchMode::kFile);
  EXPECT_EQ(l.rank, 1);
  EXPECT_EQ(l.world_size, 2);
  EXPECT_EQ(l.rendezvous_file, "/shared/gpuvs.rdv");
  EXPECT_EQ(l.source, "--rank/--ranks");
}

TEST(Launch, NcclCommIdIsARendezvous) {
  const Launch l = detect_launch({0, 2, ""}, env_of({{"NCCL_COMM_ID", "10.0.0.1:29500"}}), false);
  EXPECT_EQ(l.mode, LaunchMode::kNcclCommId);
  EXPECT_EQ(l.nccl_comm_id, "10.0.0.1:29500");
  EXPECT_NE(usage_message({0, 2, ""}, env_of({{"NCCL_COMM_ID", "nonsense"}}), false)
                .find("NCCL_COMM_ID 'nonsense': expected host:port"),
            std::string::npos);
}

TEST(Launch, FileRendezvousWinsOverNcclCommIdAndMpi) {
  const Launch l =
      detect_launch({std::nullopt, std::nullopt, "file:/tmp/r"},
                    env_of({{"PMI_RANK", "0"}, {"PMI_SIZE", "2"}, {"NCCL_COMM_ID", "h:1"}}), true);
  EXPECT_EQ(l.mode, LaunchMode::kFile);
  EXPECT_EQ(l.source, "PMI");
}

TEST(Launch, ClearErrors) {
  EXPECT_NE(usage_message({1, std::nullopt, ""}, env_of({}), true).find("go together"),
            std::string::npos);
  EXPECT_NE(usage_message({2, 2, "file:/x"}, env_of({}), true)
                .find("rank 2 (from --rank/--ranks) "
                      "is outside 0..1"),
            std::string::npos);
  EXPECT_NE(usage_message({0, 0, ""}, env_of({}), true).find("at least 1"), std::string::npos);
  EXPECT_NE(usage_message({0, 2, "tcp:host"}, env_of({}), true).find("expected file:PATH"),
            std::string::npos);
  // Ranks from mpirun, no MPI in this build, nothing else: say what to do.
  const std::string m = usage_message(
      {}, env_of({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "2"}}), false);
  EXPECT_NE(m.find("2 ranks (from Open MPI) but no way for them to meet"), std::string::npos);
  EXPECT_NE(m.find("built without MPI"), std::string::npos);
  EXPECT_NE(m.find("--rendezvous file:PATH"), std::string::npos);
  // --rank/--ranks by hand with an MPI build still need a rendezvous.
  EXPECT_NE(usage_message({0, 2, ""}, env_of({}), true).find("MPI only helps under mpirun"),
            std::string::npos);
}

TEST(Launch, MalformedLauncherVariablesAreIgnored) {
  const Launch l = detect_launch(
      {}, env_of({{"OMPI_COMM_WORLD_RANK", "x"}, {"OMPI_COMM_WORLD_SIZE", "2"}}), true);
  EXPECT_EQ(l.mode, LaunchMode::kSingleProcess);
}

TEST(Launch, NcclEnvironmentListsOnlyNcclVariables) {
  ::setenv("NCCL_GPUVS_TEST_VAR", "42", 1);
  ::setenv("NOT_NCCL_GPUVS", "1", 1);
  const auto env = nccl_environment();
  ASSERT_EQ(env.count("NCCL_GPUVS_TEST_VAR"), 1u);
  EXPECT_EQ(env.at("NCCL_GPUVS_TEST_VAR"), "42");
  for (const auto& [k, v] : env)
    EXPECT_EQ(k.rfind("NCCL_", 0), 0u) << k;
  ::unsetenv("NCCL_GPUVS_TEST_VAR");
  ::unsetenv("NOT_NCCL_GPUVS");
}

// Ranks that never meet (each measures its own node) need no way to meet: only
// contradictions are errors.
TEST(Launch, RanksWithoutAWayToMeet) {
  const Launch l = detect_ranks({}, env_of({{"SLURM_PROCID", "3"},
                                            {"SLURM_STEP_NUM_TASKS", "64"},
                                            {"SLURM_LOCALID", "1"},
                                            {"SLURM_STEP_TASKS_PER_NODE", "4(x16)"}}));
  EXPECT_EQ(l.mode, LaunchMode::kSingleProcess);
  EXPECT_TRUE(l.multi_process());
  EXPECT_EQ(l.rank, 3);
  EXPECT_EQ(l.world_size, 64);
  EXPECT_EQ(l.local_rank, 1);
  EXPECT_EQ(l.local_size, 4);
  EXPECT_EQ(l.source, "Slurm");
  // detect_launch on the same environment without MPI needs a way to meet.
  EXPECT_NE(
      usage_message({}, env_of({{"SLURM_PROCID", "3"}, {"SLURM_STEP_NUM_TASKS", "64"}}), false)
          .find("no way for them to meet"),
      std::string::npos);
  EXPECT_THROW(detect_ranks({1, std::nullopt, ""}, env_of({})), UsageError);
  EXPECT_THROW(detect_ranks({5, 4, ""}, env_of({})), UsageError);
  const Launch one = detect_ranks({}, env_of({{"OMPI_COMM_WORLD_RANK", "0"},
                                              {"OMPI_COMM_WORLD_SIZE", "1"},
                                              {"OMPI_COMM_WORLD_LOCAL_SIZE", "1"}}));
  EXPECT_FALSE(one.multi_process());
  EXPECT_FALSE(one.local_size.has_value());
}

TEST(Launch, LocalSizeFromEachLauncher) {
  EXPECT_EQ(detect_ranks({}, env_of({{"OMPI_COMM_WORLD_RANK", "5"},
                                     {"OMPI_COMM_WORLD_SIZE", "16"},
                                     {"OMPI_COMM_WORLD_LOCAL_SIZE", "8"}}))
                .local_size,
            8);
  EXPECT_EQ(
      detect_ranks({}, env_of({{"PMI_RANK", "1"}, {"PMI_SIZE", "2"}, {"MPI_LOCALNRANKS", "2"}}))
          .local_size,
      2);
  // --ntasks-per-node wins over the step's layout.
  EXPECT_EQ(detect_ranks({}, env_of({{"SLURM_PROCID", "0"},
                                     {"SLURM_STEP_NUM_TASKS", "3"},
                                     {"SLURM_NTASKS_PER_NODE", "1"},
                                     {"SLURM_STEP_TASKS_PER_NODE", "2,1"}}))
                .local_size,
            1);
  EXPECT_FALSE(detect_ranks({}, env_of({{"SLURM_PROCID", "0"},
                                        {"SLURM_STEP_NUM_TASKS", "3"},
                                        {"SLURM_STEP_TASKS_PER_NODE", "2,1"}}))
                   .local_size.has_value());
  EXPECT_FALSE(detect_ranks({0, 2, ""}, env_of({})).local_size.has_value());
}

TEST(Launch, SlurmTasksPerNode) {
  EXPECT_EQ(slurm_tasks_per_node(std::string("8")), 8);
  EXPECT_EQ(slurm_tasks_per_node(std::string("4(x16)")), 4);
  EXPECT_FALSE(slurm_tasks_per_node(std::string("2(x3),1")).has_value());
  EXPECT_FALSE(slurm_tasks_per_node(std::string("2,1")).has_value());
  EXPECT_FALSE(slurm_tasks_per_node(std::string("")).has_value());
  EXPECT_FALSE(slurm_tasks_per_node(std::string("0")).has_value());
  EXPECT_FALSE(slurm_tasks_per_node(std::string("x")).has_value());
  EXPECT_FALSE(slurm_tasks_per_node(std::string("4(x)")).has_value());
  EXPECT_FALSE(slurm_tasks_per_node(std::nullopt).has_value());
}

TEST(Launch, EachRankTakesItsGpusOfTheNode) {
  const std::vector<int> all = {0, 1, 2, 3, 4, 5, 6, 7};
  Launch one;  // a single process: what was asked
  EXPECT_EQ(rank_devices(one, 8, all), all);
  Launch per_node;  // one rank per node: every GPU of the node
  per_node.world_size = 64;
  per_node.rank = 3;
  per_node.local_rank = 0;
  per_node.local_size = 1;
  EXPECT_EQ(rank_devices(per_node, 8, all), all);
  EXPECT_EQ(rank_devices(per_node, 8, {2}), std::vector<int>{2});
  Launch per_gpu = per_node;  // one rank per GPU: its local rank's
  per_gpu.local_rank = 5;
  per_gpu.local_size = 8;
  EXPECT_EQ(rank_devices(per_gpu, 8, all), std::vector<int>{5});
  per_gpu.local_rank = 9;  // more ranks than GPUs: they share, modulo
  EXPECT_EQ(rank_devices(per_gpu, 8, all), std::vector<int>{1});
  Launch unknown = per_node;  // the launcher does not say how many share the node
  unknown.local_size.reset();
  EXPECT_EQ(rank_devices(unknown, 8, all), all);
}

}  // namespace
}  // namespace gpuvs::comm
