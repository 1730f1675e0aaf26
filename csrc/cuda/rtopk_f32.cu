// One dtype per file, its heaviest kernels in csrc/cuda/inst/, so the kernels compile in parallel.
#include "rtopk_kernels.cuh"
#include "rtopk_split_rows.cuh"

namespace rtopk {
RTOPK_EXTERN_PARTS(float);
template bool launch_rtopk<float>(const float*, float*, int64_t*, const RowLaunch&, cudaStream_t);
template void launch_split_segments<float>(const float*, float*, int64_t*, const RowLaunch&,
                                           RowSplit, cudaStream_t);
template bool launch_sort_rows<float>(float*, int64_t*, int64_t, int64_t, bool, int, cudaStream_t);
template void launch_split_early<float>(const float*, float*, int64_t*, const RowLaunch&,
                                        SplitEarly, void*, cudaStream_t);
}  // namespace rtopk
