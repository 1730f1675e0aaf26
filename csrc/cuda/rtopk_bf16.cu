// One dtype per file, its heaviest kernels in csrc/cuda/inst/, so the kernels compile in parallel.
#include "rtopk_kernels.cuh"
#include "rtopk_split_rows.cuh"

namespace rtopk {
RTOPK_EXTERN_PARTS(__nv_bfloat16);
extern RTOPK_PAIR_ROWS(__nv_bfloat16);
template bool launch_rtopk<__nv_bfloat16>(const __nv_bfloat16*, __nv_bfloat16*, int64_t*,
                                          const RowLaunch&, cudaStream_t);
template void launch_split_segments<__nv_bfloat16>(const __nv_bfloat16*, __nv_bfloat16*, int64_t*,
                                                   const RowLaunch&, RowSplit, cudaStream_t);
template bool launch_sort_rows<__nv_bfloat16>(__nv_bfloat16*, int64_t*, int64_t, int64_t, bool, int,
                                              cudaStream_t);
template void launch_split_early<__nv_bfloat16>(const __nv_bfloat16*, __nv_bfloat16*, int64_t*,
                                                const RowLaunch&, SplitEarly, void*, cudaStream_t);
}  // namespace rtopk
