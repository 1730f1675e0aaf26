// One dtype per file so the kernels compile in parallel.
#include "rtopk_kernels.cuh"
#include "rtopk_split_rows.cuh"

namespace rtopk {
template bool launch_rtopk<double>(const double*, double*, int64_t*, const RowLaunch&,
                                   cudaStream_t);
template bool launch_sort_rows<double>(double*, int64_t*, int64_t, int64_t, bool, int,
                                       cudaStream_t);
template void launch_split_early<double>(const double*, double*, int64_t*, const RowLaunch&,
                                         SplitEarly, void*, cudaStream_t);
}  // namespace rtopk
