// The build's paths (CMakeLists.txt defines them on this file only; model/test_paths.h says why).
#include "model/test_paths.h"

namespace tandem {
const char* test_source_dir() { return TANDEM_SOURCE_DIR_VALUE; }
const char* test_binary_dir() { return TANDEM_BINARY_DIR_VALUE; }
const char* test_shared_dir() { return TANDEM_SHARED_DIR_VALUE; }
const char* test_python() { return TANDEM_PYTHON_VALUE; }
}  // namespace tandem
