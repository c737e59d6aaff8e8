// A planted data race: two threads increment one plain int. Built only in
// ThreadSanitizer builds; scripts/run_tests.sh runs it first in its TSan
// stage and requires a "data race" report, so a stage that stopped checking
// (the sanitizer not linked, reports switched off) fails instead of passing.
#include <cstdio>
#include <thread>

namespace {
int counter = 0;  // deliberately unsynchronised
}

int main() {
  auto bump = [] {
    for (int i = 0; i < 100000; ++i) ++counter;
  };
  std::thread a(bump), b(bump);
  a.join();
  b.join();
  std::printf("counter = %d\n", counter);
  return 0;
}
