// The four-lane kernel of rows of 193..256 elements for __nv_bfloat16 (declared in
// rtopk_kernels.cuh).
#include "../rtopk_kernels.cuh"

namespace rtopk {
RTOPK_LANE_ROWS(__nv_bfloat16);
}  // namespace rtopk
