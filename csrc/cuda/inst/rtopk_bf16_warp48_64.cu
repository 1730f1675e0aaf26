// The warp kernels of 48 and 64 values per lane for __nv_bfloat16 (declared in rtopk_kernels.cuh).
#include "../rtopk_kernels.cuh"

namespace rtopk {
RTOPK_WARP_ROWS(__nv_bfloat16, 48);
RTOPK_WARP_ROWS(__nv_bfloat16, 64);
}  // namespace rtopk
