// The warp kernels of 48 and 64 values per lane for float (declared in rtopk_kernels.cuh).
#include "../rtopk_kernels.cuh"

namespace rtopk {
RTOPK_WARP_ROWS(float, 48);
RTOPK_WARP_ROWS(float, 64);
}  // namespace rtopk
