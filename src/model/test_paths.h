// Where the tests find their files: the checkout, the build directory, ../shared and a Python
// with numpy. The build decides them once, on test_paths.cpp alone (tandem_test_support), so that
// no test object depends on where the checkout lies and a clone elsewhere (CI's) reuses the
// compiler cache's objects. Test sources use the macros below; benchmarks that define them on
// their command line keep their own.
#pragma once

namespace tandem {
const char* test_source_dir();
const char* test_binary_dir();
const char* test_shared_dir();
const char* test_python();
}  // namespace tandem

#ifndef TANDEM_SOURCE_DIR
#define TANDEM_SOURCE_DIR ::tandem::test_source_dir()
#endif
#ifndef TANDEM_BINARY_DIR
#define TANDEM_BINARY_DIR ::tandem::test_binary_dir()
#endif
#ifndef TANDEM_SHARED_DIR
#define TANDEM_SHARED_DIR ::tandem::test_shared_dir()
#endif
#ifndef TANDEM_PYTHON
#define TANDEM_PYTHON ::tandem::test_python()
#endif
