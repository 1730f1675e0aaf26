// The group kernel of 8 warps a row for float (declared in rtopk_kernels.cuh).
#include "../rtopk_kernels.cuh"

namespace rtopk {
RTOPK_GROUP_ROWS(float, 8);
}  // namespace rtopk
