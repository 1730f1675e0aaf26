// The group kernel of 4 warps a row for __half (declared in rtopk_kernels.cuh).
#include "../rtopk_kernels.cuh"

namespace rtopk {
RTOPK_GROUP_ROWS(__half, 4);
}  // namespace rtopk
