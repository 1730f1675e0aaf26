// The group kernel of 4 warps a row for __nv_bfloat16 (declared in rtopk_kernels.cuh).
#include "../rtopk_kernels.cuh"

namespace rtopk {
RTOPK_GROUP_ROWS(__nv_bfloat16, 4);
}  // namespace rtopk
