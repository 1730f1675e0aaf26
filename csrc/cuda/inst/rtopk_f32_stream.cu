// The streaming kernel for float (declared in rtopk_kernels.cuh).
#include "../rtopk_kernels.cuh"

namespace rtopk {
RTOPK_STREAM_ROWS(float);
}  // namespace rtopk
