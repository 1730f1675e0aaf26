// One dtype per file so the kernels compile in parallel.
#include "rtopk_kernels.cuh"

namespace rtopk {
template void launch_rtopk<double>(const double*, double*, int64_t*, int64_t, int64_t, int64_t,
                                   int64_t, double, int, cudaStream_t);
}  // namespace rtopk
