// CUDA-side harness pieces: event timing scales with the work, the L2 flusher runs,
// device memory errors are clear, the device scope restores the current device.
#include <string>

#include "core/error.h"
#include "gpu/check.h"
#include "gpu/device.h"
#include "gpu_test_util.h"
#include "measure/cuda_timer.h"

namespace gpuvs {
namespace {

TEST(EventTimed, TimeGrowsWithIterations) {
  GPUVS_REQUIRE_GPU();
  const size_t bytes = size_t{256} << 20;
  DeviceBuffer buf(bytes);
  Stream stream;
  EventTimed timed(stream.get(), [&](cudaStream_t s) {
    GPUVS_CUDA_CHECK(cudaMemsetAsync(buf.get(), 1, bytes, s));
  });
  timed.run(2);  // warm
  const double one = timed.run(1);
  const double eight = timed.run(8);
  EXPECT_GT(one, 0);
  EXPECT_GT(eight, 4 * one);
  EXPECT_LT(eight, 16 * one);
}

TEST(L2Flusher, FlushesWithoutError) {
  GPUVS_REQUIRE_GPU();
  int l2 = 0;
  GPUVS_CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
  L2Flusher flusher(static_cast<size_t>(l2));
  Stream stream;
  EXPECT_NO_THROW(flusher.flush(stream.get()));
}

TEST(DeviceBuffer, ImpossibleAllocationIsAClearError) {
  GPUVS_REQUIRE_GPU();
  try {
    DeviceBuffer huge(size_t{1} << 50);  // 1 PiB
    FAIL() << "a 1 PiB allocation succeeded";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("cannot allocate 1024 TiB"), std::string::npos) << msg;
  }
  DeviceBuffer after(1 << 20);  // the failure left nothing sticky behind
  EXPECT_NE(after.get(), nullptr);
}

TEST(DeviceScope, RestoresPreviousDevice) {
  GPUVS_REQUIRE_GPU();
  GPUVS_CUDA_CHECK(cudaSetDevice(0));
  {
    DeviceScope scope(0);
    int d = -1;
    GPUVS_CUDA_CHECK(cudaGetDevice(&d));
    EXPECT_EQ(d, 0);
  }
  int d = -1;
  GPUVS_CUDA_CHECK(cudaGetDevice(&d));
  EXPECT_EQ(d, 0);
}

}  // namespace
}  // namespace gpuvs
