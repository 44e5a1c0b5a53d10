// Levels 2 and 3 of `gpuvs check` (docs/check.md), which need CUDA: registered into
// check/levels.h's table by register_gpu_levels() in a CUDA build.
//  - level 2: level 1's NVML health, judged over the whole check; the memory test over
//    at least 90 % of free memory; GEMM consistency (BF16 and FP32: bits repeatable,
//    equal across the node's GPUs of a model, rate within 5 % of the node's median);
//    HBM copy and host-link bandwidth against floors (the datasheet x a factor, the
//    PCIe link's rate x a factor) and, with a baseline, every figure against it;
//  - level 3: level 2, then the sustained load (BF16 GEMMs and the memory test together
//    for --duration) on every GPU at once, the Xid events watched all the while, and
//    the error counters compared from before the first test to after the load.
// NVML indices are mapped to CUDA devices by PCI bus id; a GPU CUDA does not see
// (CUDA_VISIBLE_DEVICES) gets a warning and level 1's tests only.
#pragma once

namespace gpuvs::check {

void register_gpu_levels();

}  // namespace gpuvs::check
