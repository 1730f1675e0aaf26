// The group kernel of 8 warps a row for __half (declared in rtopk_kernels.cuh).
#include "../rtopk_kernels.cuh"

namespace rtopk {
RTOPK_GROUP_ROWS(__half, 8);
}  // namespace rtopk
