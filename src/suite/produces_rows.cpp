// The rows of the table of what gpuvs produces (produces_rows.h): every family's id
// pattern, unit, placeholders and configuration, the benchmarks, the importers and the
// models. produces.cpp checks them and answers the lookups.
#include "suite/produces_rows.h"

#include <array>

namespace gpuvs::produces_rows {

namespace {

using V = std::vector<PlaceholderValue>;

// Placeholder value lists shared by several families.
const V kCollectiveOps = {{"all_reduce"}, {"all_gather"}, {"reduce_scatter"}, {"broadcast"},
                          {"reduce"},     {"alltoall"},   {"sendrecv"}};
// The GEMM precisions of compute.gemm (cuBLASLt type names; FP8 in both formats).
const V kGemmPrecisions = {{"fp64"}, {"fp32"},     {"tf32"},     {"fp16"},
                           {"bf16"}, {"fp8_e4m3"}, {"fp8_e5m2"}, {"int8", "OP/s"}};
// Model precisions and modes as models/config.cpp spells them (a CPU test checks).
const V kModelModes = {{"train"}, {"infer"}};
const V kModelPrecisions = {{"fp32"}, {"tf32"}, {"fp16"}, {"bf16"}, {"fp8"}};

constexpr std::array<ModelDef, 5> kModels = {{
    {"resnet50", "ResNet-50", "img", false, false},
    {"bert-large", "BERT-large", "seq", true, true},
    {"llama-1b", "Llama 3.2 1B", "tokens", true, true, true},
    {"llama-3b", "Llama 3.2 3B", "tokens", true, true, true},
    {"llama-8b", "Llama 3.1 8B", "tokens", true, true, true},
}};

V model_values() {
  V v;
  for (const ModelDef& m : kModels)
    v.push_back({m.id});
  return v;
}

// The parameters that tell model configurations apart; the defaults are what a
// configuration is unless it says otherwise.
std::vector<ConfigParameter> model_config() {
  return {{"precision"},
          {"batch"},
          {"seq"},
          {"accumulate", "1"},
          {"graph", "true"},
          {"attention", "unfused"},
          {"deterministic", "false"},
          {"recompute", "none"}};
}

std::vector<Placeholder> model_placeholders() {
  return {{"model", model_values()}, {"mode", kModelModes}, {"precision", kModelPrecisions}};
}

// A decoder's inference: the prompt length and the tokens decoded after it.
std::vector<ConfigParameter> decoder_config() {
  std::vector<ConfigParameter> c = model_config();
  c.push_back({"prompt"});
  c.push_back({"generated"});
  c.push_back({"kv_cache", "activations"});  // "fp8" where the cache is E4M3
  return c;
}

std::vector<Placeholder> model_layer_placeholders() {
  std::vector<Placeholder> p = model_placeholders();
  p.push_back({"layer", {}});
  return p;
}

// Collective results with the settings a default NCCL run uses; the algorithm study
// writes the same ids with other algo/proto values.
std::vector<ConfigParameter> collective_config() {
  return {{"ranks"},
          {"bytes"},
          {"dtype", "float32"},
          {"algo", "default"},
          {"proto", "default"},
          {"graph", "false"},
          {"buffers", "cudaMalloc"}};
}

// nvbandwidth's single-node tests that import as nvbandwidth.{testcase}: every one
// but the five whose figures are gpuvs's own (host copies, peer copies and the peer
// latency); the two bidirectional write tests are here for the one-matrix form that
// nvbandwidth wrote before 0.6, a direction measured while the other ran.
V nvbandwidth_testcases() {
  return {{"host_to_device_bidirectional_memcpy_ce"},
          {"device_to_host_bidirectional_memcpy_ce"},
          {"host_to_device_bidirectional_memcpy_sm"},
          {"device_to_host_bidirectional_memcpy_sm"},
          {"device_to_device_memcpy_read_ce"},
          {"device_to_device_bidirectional_memcpy_read_ce"},
          {"device_to_device_bidirectional_memcpy_write_ce"},
          {"device_local_copy"},
          {"all_to_host_memcpy_ce"},
          {"all_to_host_bidirectional_memcpy_ce"},
          {"host_to_all_memcpy_ce"},
          {"host_to_all_bidirectional_memcpy_ce"},
          {"all_to_one_write_ce"},
          {"all_to_one_read_ce"},
          {"one_to_all_write_ce"},
          {"one_to_all_read_ce"},
          {"host_device_latency_sm", "s"},
          {"host_to_device_memcpy_sm"},
          {"device_to_host_memcpy_sm"},
          {"device_to_device_memcpy_read_sm"},
          {"device_to_device_bidirectional_memcpy_read_sm"},
          {"device_to_device_bidirectional_memcpy_write_sm"},
          {"all_to_host_memcpy_sm"},
          {"all_to_host_bidirectional_memcpy_sm"},
          {"host_to_all_memcpy_sm"},
          {"host_to_all_bidirectional_memcpy_sm"},
          {"all_to_one_write_sm"},
          {"all_to_one_read_sm"},
          {"one_to_all_write_sm"},
          {"one_to_all_read_sm"}};
}

}  // namespace

std::vector<FamilyDef> families() {
  using F = Family;
  return {
      {F::kHbmStream,
       "memory.hbm.{op}",
       "B/s",
       "HBM bandwidth of a STREAM-style kernel, bytes read plus written; arrays far larger "
       "than the L2",
       {{"op", {{"read"}, {"write"}, {"copy"}, {"scale"}, {"add"}, {"triad"}, {"dot"}}}},
       {}},
      {F::kL2Read, "memory.l2.read", "B/s", "L2 read bandwidth, working set within the L2", {}, {}},
      {F::kSmemRead, "memory.smem.read", "B/s", "Shared-memory read bandwidth, all SMs", {}, {}},
      {F::kReadSweep,
       "memory.read_sweep",
       "B/s",
       "Read bandwidth against working-set size (L1, L2, HBM)",
       {},
       {{"bytes"}}},
      {F::kLatency,
       "memory.latency",
       "s",
       "Load-to-use latency by pointer chasing, per working-set size",
       {},
       {{"bytes"}, {"order"}, {"stride_bytes"}}},
      {F::kLargestAllocation,
       "memory.capacity.largest_allocation",
       "B",
       "Largest single cudaMalloc that succeeds",
       {},
       {}},
      {F::kTotalAllocatable,
       "memory.capacity.total_allocatable",
       "B",
       "Device memory allocatable in pieces",
       {},
       {}},
      {F::kFma,
       "compute.fma.{type}",
       "FLOP/s",
       "CUDA-core peak by dependent FMA chains on every SM",
       {{"type", {{"fp64"}, {"fp32"}, {"fp16x2"}, {"bf16x2"}, {"int32", "OP/s"}}}},
       {}},
      {F::kGemm,
       "compute.gemm.{precision}",
       "FLOP/s",
       "cuBLASLt GEMM at 8192^3 (TN), a short burst",
       {{"precision", kGemmPrecisions}},
       {{"m"}, {"n"}, {"k"}}},
      {F::kGemmBest,
       "compute.gemm.{precision}.best",
       "FLOP/s",
       "cuBLASLt GEMM at the best shape of a search, a short burst",
       {{"precision", kGemmPrecisions}},
       {}},
      {F::kGemmSustained,
       "compute.gemm.{precision}.sustained",
       "FLOP/s",
       "cuBLASLt GEMM at 8192^3 after a preload at full power (what long jobs get)",
       {{"precision", kGemmPrecisions}},
       {}},
      {F::kRoofline,
       "roofline.{kind}",
       "FLOP/s",
       "Attained FLOP/s against arithmetic intensity",
       {{"kind", {{"fp32"}, {"fp16x2"}, {"bf16x2"}, {"gemm.bf16"}}}},
       {{"intensity"}}},
      {F::kRooflineRidge,
       "roofline.{kind}.ridge",
       "FLOP/B",
       "Measured ridge point: peak FLOP/s over bandwidth",
       {{"kind", {{"fp32"}, {"fp16x2"}, {"bf16x2"}, {"gemm.bf16"}}}},
       {}},
      {F::kHostCopy,
       "host.{direction}.{memory}",
       "B/s",
       "Host link copies (cudaMemcpyAsync) against size",
       {{"direction", {{"h2d"}, {"d2h"}, {"bidirectional"}}},
        {"memory", {{"pinned"}, {"pageable"}}}},
       {{"bytes"}}},
      {F::kZeroCopy,
       "host.zerocopy.{op}",
       "B/s",
       "Kernels reading or writing mapped host memory against size",
       {{"op", {{"read"}, {"write"}, {"bidirectional"}, {"reread"}}}},
       {{"bytes"}}},
      {F::kZeroCopySparse,
       "host.zerocopy.sparse",
       "s",
       "Time to touch a sparse part of a mapped host buffer, against copying it all",
       {},
       {}},
      {F::kPeerLink,
       "peer.link",
       "",
       "Peer links: unsupported (one GPU selected), no figure",
       {},
       {}},
      {F::kPeerCopy,
       "peer.{engine}.{direction}",
       "B/s",
       "Peer copy bandwidth per GPU pair (copy engine or SM-driven)",
       {{"engine", {{"ce"}, {"sm"}}}, {"direction", {{"unidirectional"}, {"bidirectional"}}}},
       {{"src"}, {"dst"}}},
      {F::kPeerLatency,
       "peer.latency",
       "s",
       "Load latency from a peer GPU's memory",
       {},
       {{"src"}, {"dst"}}},
      {F::kCollectiveBusbw,
       "collective.{op}.busbw",
       "B/s",
       "NCCL bus bandwidth (nccl-tests' definition) against size",
       {{"op", kCollectiveOps}},
       collective_config()},
      {F::kCollectiveTime,
       "collective.{op}.time",
       "s",
       "NCCL collective time against size",
       {{"op", kCollectiveOps}},
       collective_config()},
      {F::kNcclTestsBusbw,
       "collective.{op}.busbw.nccl_tests",
       "B/s",
       "The same, measured by NVIDIA's nccl-tests (beside gpuvs, or imported from its log)",
       {{"op", kCollectiveOps}},
       collective_config(),
       "nccl-tests",
       F::kCollectiveBusbw},
      {F::kNcclTestsTime,
       "collective.{op}.time.nccl_tests",
       "s",
       "The same, measured by NVIDIA's nccl-tests (beside gpuvs, or imported from its log)",
       {{"op", kCollectiveOps}},
       collective_config(),
       "nccl-tests",
       F::kCollectiveTime},
      {F::kLaunchLatency,
       "launch.empty.latency",
       "s",
       "Launch and wait for one empty kernel",
       {},
       {}},
      {F::kLaunchRate,
       "launch.empty.throughput",
       "launch/s",
       "Empty kernels launched back to back",
       {},
       {}},
      {F::kGraphNode, "launch.graph.node", "s", "CUDA graph replay, per kernel node", {}, {}},
      {F::kLaunchChain,
       "launch.chain.{mode}",
       "s",
       "A chain of 16 small kernels, from a stream or as one CUDA graph",
       {{"mode", {{"stream"}, {"graph"}}}},
       {}},
      {F::kModelRate, "model.{model}.{mode}.{precision}", "{item}/s",
       "End-to-end model throughput (CUDA graph of one whole step)", model_placeholders(),
       model_config()},
      {F::kModelFlops, "model.{model}.{mode}.{precision}.flops", "FLOP/s",
       "The model's FLOPs per item times its throughput", model_placeholders(), model_config()},
      {F::kModelTokens, "model.{model}.{mode}.{precision}.tokens", "tokens/s",
       "Tokens per second (sequence models)", model_placeholders(), model_config()},
      {F::kModelStepTime, "model.{model}.{mode}.{precision}.step_time", "s",
       "Time of single steps back to back (median; p99 in the stats)", model_placeholders(),
       model_config()},
      {F::kModelPeakMemory, "model.{model}.{mode}.{precision}.peak_memory", "B",
       "Device memory the model took", model_placeholders(), model_config()},
      {F::kModelEnergy, "model.{model}.{mode}.{precision}.energy_per_item", "J/{item}",
       "Energy per item (NVML energy counter over the single steps)", model_placeholders(),
       model_config()},
      {F::kModelMaxBatch, "model.{model}.{mode}.{precision}.max_batch", "{batch}",
       "Largest batch that fits (`--batch max`)", model_placeholders(), model_config()},
      {F::kModelLayers, "model.{model}.{mode}.{precision}.layer", "s",
       "Per-layer profile: unsupported where a model does not time its layers",
       model_placeholders(), model_config()},
      {F::kModelLayer, "model.{model}.{mode}.{precision}.layer.{layer}", "s",
       "Per-layer (per-region) time of one step, timed eagerly (`--profile`)",
       model_layer_placeholders(), model_config()},
      {F::kModelPrefill, "model.{model}.{mode}.{precision}.prefill", "tokens/s",
       "Prefill: prompt tokens per second over the batch (decoders)", model_placeholders(),
       decoder_config()},
      {F::kModelDecode, "model.{model}.{mode}.{precision}.decode", "tokens/s",
       "Decode: new tokens per second over the batch, each step one CUDA graph with the KV "
       "cache (decoders)",
       model_placeholders(), decoder_config()},
      {F::kModelTtft, "model.{model}.{mode}.{precision}.ttft", "s",
       "Time to first token: the prompt's prefill and the first greedy choice (median)",
       model_placeholders(), decoder_config()},
      {F::kModelItl, "model.{model}.{mode}.{precision}.itl", "s",
       "Inter-token latency: one decode step (median; p99 in the stats)", model_placeholders(),
       decoder_config()},
      {F::kModelDecodeShare, "model.{model}.{mode}.{precision}.decode.bandwidth_share", "1",
       "Bytes a decode step must read (its weights and KV cache) per step time, over this "
       "GPU's HBM copy bandwidth measured in the same run",
       model_placeholders(), decoder_config()},
      {F::kModelMfu, "model.{model}.{mode}.{precision}.mfu", "1",
       "Model FLOPs utilisation: the model's FLOPs (6 N per token plus attention's 12 L h s) "
       "per second over this GPU's datasheet dense peak at that precision (decoder training)",
       model_placeholders(), model_config()},
      {F::kModelMfuGemm, "model.{model}.{mode}.{precision}.mfu.gemm", "1",
       "Model FLOPs utilisation against the GEMM: the model's FLOPs per second over an "
       "8192^3 GEMM at that precision measured in the same run (decoder training)",
       model_placeholders(), model_config()},
      // Imported from nvbandwidth's JSON (import/nvbandwidth_json.cpp): its tests whose
      // definition is gpuvs's, under gpuvs's ids with a suffix, and the others apart.
      {F::kNvbwHostCopy,
       "host.{direction}.{memory}.nvbandwidth",
       "B/s",
       "Host link copies (cuMemcpyAsync, pinned) measured by NVIDIA's nvbandwidth",
       {{"direction", {{"h2d"}, {"d2h"}}}, {"memory", {{"pinned"}}}},
       {{"bytes"}},
       "nvbandwidth",
       F::kHostCopy},
      {F::kNvbwPeerCopy,
       "peer.{engine}.{direction}.nvbandwidth",
       "B/s",
       "Peer copy bandwidth per GPU pair (copy engine or SM-driven writes) measured by "
       "NVIDIA's nvbandwidth",
       {{"engine", {{"ce"}, {"sm"}}}, {"direction", {{"unidirectional"}, {"bidirectional"}}}},
       {{"src"}, {"dst"}},
       "nvbandwidth",
       F::kPeerCopy},
      {F::kNvbwPeerLatency,
       "peer.latency.nvbandwidth",
       "s",
       "Load latency from a peer GPU's memory (pointer chase) measured by NVIDIA's nvbandwidth",
       {},
       {{"src"}, {"dst"}},
       "nvbandwidth",
       F::kPeerLatency},
      {F::kNvbandwidth,
       "nvbandwidth.{testcase}",
       "B/s",
       "An nvbandwidth test gpuvs has no figure of the same definition for, as nvbandwidth "
       "reports it",
       {{"testcase", nvbandwidth_testcases()}},
       {{"row"}, {"column"}, {"gpu"}, {"bytes"}},
       "nvbandwidth"},
      {F::kNvbench,
       "nvbench.{figure}",
       "s",
       "A benchmark built with NVIDIA's nvbench: cold GPU time per launch, batch GPU time "
       "per launch, global memory bandwidth",
       {{"figure", {{"gpu_time"}, {"batch_gpu_time"}, {"bandwidth", "B/s"}}}},
       {{"benchmark"}, {"state"}},
       "nvbench"},
  };
}

std::vector<BenchmarkDef> benchmarks() {
  using F = Family;
  const std::vector<Family> model_writes = {
      F::kModelRate,       F::kModelFlops,       F::kModelTokens,   F::kModelStepTime,
      F::kModelPeakMemory, F::kModelEnergy,      F::kModelMaxBatch, F::kModelLayers,
      F::kModelLayer,      F::kModelPrefill,     F::kModelDecode,   F::kModelTtft,
      F::kModelItl,        F::kModelDecodeShare, F::kModelMfu,      F::kModelMfuGemm};
  return {
      {"memory.hbm",
       "memory",
       "HBM read, write, copy, scale, add, triad, dot (launch shape tuned per device)",
       true,
       BenchScope::kPerDevice,
       {F::kHbmStream}},
      {"memory.cache",
       "memory",
       "L2 and shared-memory bandwidth; read bandwidth vs working set",
       true,
       BenchScope::kPerDevice,
       {F::kL2Read, F::kSmemRead, F::kReadSweep}},
      {"memory.latency",
       "memory",
       "Load latency by pointer chasing, 4 KiB to 4 GiB working sets",
       true,
       BenchScope::kPerDevice,
       {F::kLatency}},
      {"memory.capacity",
       "memory",
       "Largest single allocation and total allocatable memory",
       true,
       BenchScope::kPerDevice,
       {F::kLargestAllocation, F::kTotalAllocatable}},
      {"compute.fma",
       "compute",
       "CUDA-core peaks: FP64, FP32, FP16x2, BF16x2 FMA and INT32 IMAD chains on every SM",
       true,
       BenchScope::kPerDevice,
       {F::kFma}},
      {"compute.gemm",
       "compute",
       "cuBLASLt GEMM, 8192^3 (burst, sustained) and best shape: FP64 to FP8, INT8",
       true,
       BenchScope::kPerDevice,
       {F::kGemm, F::kGemmBest, F::kGemmSustained}},
      {"compute.roofline",
       "compute",
       "Roofline sweeps (FP32, FP16x2, BF16x2 streaming; BF16 GEMM) and measured ridge points",
       false,
       BenchScope::kPerDevice,
       {F::kRoofline, F::kRooflineRidge}},
      {"host.link",
       "host",
       "Host link: to/from device and both ways; pageable, pinned, zero-copy; vs size",
       true,
       BenchScope::kPerDevice,
       {F::kHostCopy, F::kZeroCopy, F::kZeroCopySparse}},
      {"peer.link",
       "peer",
       "Peer links per GPU pair: copy engine and SM copies, one and both ways, latency, path",
       true,
       BenchScope::kAllDevices,
       {F::kPeerLink, F::kPeerCopy, F::kPeerLatency}},
      {"collectives.nccl",
       "collectives",
       "NCCL all_reduce, all_gather, reduce_scatter, broadcast, reduce, alltoall, sendrecv: "
       "busbw and latency vs size, data checked",
       true,
       BenchScope::kAllDevices,
       {F::kCollectiveBusbw, F::kCollectiveTime, F::kNcclTestsBusbw, F::kNcclTestsTime}},
      {"collectives.algorithms",
       "collectives",
       "Which NCCL_ALGO x NCCL_PROTO wins per op and size, against NCCL's default choice",
       false,
       BenchScope::kAllDevices,
       {F::kCollectiveBusbw, F::kCollectiveTime}},
      {"launch.overhead",
       "launch",
       "Kernel launch latency and rate, graph replay per node, graph vs stream speed-up",
       true,
       BenchScope::kPerDevice,
       {F::kLaunchLatency, F::kLaunchRate, F::kGraphNode, F::kLaunchChain}},
      {"model.end_to_end", "model",
       "End-to-end models: ResNet-50 bf16 train and infer at batch 256, BERT-large bf16 "
       "train and infer at seq 128, batch 64 (`gpuvs model` for all options)",
       true, BenchScope::kPerDevice, model_writes},
  };
}

std::vector<ImporterDef> importers() {
  using F = Family;
  return {
      {"nccl-tests",
       "the text that all_reduce_perf and the other *_perf binaries print (stdout)",
       {F::kNcclTestsBusbw, F::kNcclTestsTime}},
      {"nvbench", "the JSON a benchmark built with nvbench writes (--json FILE)", {F::kNvbench}},
      {"nvbandwidth",
       "the JSON nvbandwidth prints with -j (stdout)",
       {F::kNvbwHostCopy, F::kNvbwPeerCopy, F::kNvbwPeerLatency, F::kNvbandwidth}},
  };
}

std::span<const ModelDef> models() {
  return kModels;
}

}  // namespace gpuvs::produces_rows
