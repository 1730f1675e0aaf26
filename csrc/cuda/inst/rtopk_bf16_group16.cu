// The group kernel of 16 warps a row for __nv_bfloat16 (declared in rtopk_kernels.cuh).
#include "../rtopk_kernels.cuh"

namespace rtopk {
RTOPK_GROUP_ROWS(__nv_bfloat16, 16);
}  // namespace rtopk
