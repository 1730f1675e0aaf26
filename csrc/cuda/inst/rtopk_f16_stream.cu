// The streaming kernel for __half (declared in rtopk_kernels.cuh).
#include "../rtopk_kernels.cuh"

namespace rtopk {
RTOPK_STREAM_ROWS(__half);
}  // namespace rtopk
