// The packed-pair kernels for __half (declared in rtopk_kernels.cuh).
#include "../rtopk_kernels.cuh"

namespace rtopk {
RTOPK_PAIR_ROWS(__half);
}  // namespace rtopk
