// One dtype per file so the kernels compile in parallel.
#include "rtopk_kernels.cuh"

namespace rtopk {
template void launch_rtopk<__nv_bfloat16>(const __nv_bfloat16*, __nv_bfloat16*, int64_t*, int64_t,
                                          int64_t, int64_t, int64_t, double, int, cudaStream_t);
}  // namespace rtopk
