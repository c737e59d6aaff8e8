// Internal: factories linked in by the backend directories (cpu/, and
// either cuda/ or no_cuda/ chosen at link time, never by #ifdef).
#pragma once

#include <memory>

#include "sylva/backend/backend.h"

namespace sylva {
std::unique_ptr<Backend> make_cpu_backend();
std::unique_ptr<Backend> make_cuda_backend(int index);
}  // namespace sylva
