// The four-lane kernel of rows of 193..256 elements for __half (declared in rtopk_kernels.cuh).
#include "../rtopk_kernels.cuh"

namespace rtopk {
RTOPK_LANE_ROWS(__half);
}  // namespace rtopk
