// The group kernel of 4 warps a row for float (declared in rtopk_kernels.cuh).
#include "../rtopk_kernels.cuh"

namespace rtopk {
RTOPK_GROUP_ROWS(float, 4);
}  // namespace rtopk
