// sylva::Error and the assertion macros used across the library.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace sylva {

/// The one exception type Sylva throws for anything a user can cause
/// (bad input, shape mismatch, missing file) and for broken internal
/// invariants. Messages start with a component tag: "[gather] ...".
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

namespace detail {
[[noreturn]] void assert_failed(const char* expr, const char* file, int line, const std::string& msg);

template <class... Args>
std::string concat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}
}  // namespace detail

}  // namespace sylva

/// Throws sylva::Error built from the streamed arguments:
/// SYLVA_THROW("[matmul] inner dimensions differ: ", a, " vs ", b).
#define SYLVA_THROW(...) throw ::sylva::Error(::sylva::detail::concat(__VA_ARGS__))

/// Checks a user-facing precondition; on failure throws sylva::Error.
#define SYLVA_CHECK(cond, ...)                   \
  do {                                           \
    if (!(cond)) SYLVA_THROW(__VA_ARGS__);       \
  } while (0)

/// Internal invariant. Always on (cheap); throws instead of aborting so a
/// bug surfaces as an exception with file and line, never as a crash.
#define SYLVA_ASSERT(cond, ...)                                                            \
  do {                                                                                     \
    if (!(cond))                                                                           \
      ::sylva::detail::assert_failed(#cond, __FILE__, __LINE__,                            \
                                     ::sylva::detail::concat("" __VA_OPT__(, ) __VA_ARGS__)); \
  } while (0)
