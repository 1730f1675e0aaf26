// The packed-pair kernels for __nv_bfloat16 (declared in rtopk_kernels.cuh).
#include "../rtopk_kernels.cuh"

namespace rtopk {
RTOPK_PAIR_ROWS(__nv_bfloat16);
}  // namespace rtopk
