// One dtype per file, its heaviest kernels in csrc/cuda/inst/, so the kernels compile in parallel.
#include "rtopk_kernels.cuh"
#include "rtopk_split_rows.cuh"

namespace rtopk {
RTOPK_EXTERN_PARTS(__half);
extern RTOPK_PAIR_ROWS(__half);
template bool launch_rtopk<__half>(const __half*, __half*, int64_t*, const RowLaunch&,
                                   cudaStream_t);
template void launch_split_segments<__half>(const __half*, __half*, int64_t*, const RowLaunch&,
                                            RowSplit, cudaStream_t);
template bool launch_sort_rows<__half>(__half*, int64_t*, int64_t, int64_t, bool, int,
                                       cudaStream_t);
template void launch_split_early<__half>(const __half*, __half*, int64_t*, const RowLaunch&,
                                         SplitEarly, void*, cudaStream_t);
}  // namespace rtopk
