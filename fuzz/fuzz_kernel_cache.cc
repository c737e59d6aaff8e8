// NVRTC kernel-cache entries (src/backend/cuda/cache_entry.h), as the cache
// reads them from disk: a file decodes to a payload or is damage, never an
// exception or an allocation the header asks for. Oracles: what decodes
// encodes back to the same bytes; any bytes, encoded as a payload, decode
// to themselves.
#include "../src/backend/cuda/cache_entry.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = sylva::fuzz::as_file(data, size, ".cubin");
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  sylva::fuzz::only_sylva_errors([&] {
    std::string why;
    const std::optional<std::string> payload = sylva::cuda::read_cache_entry(path, &why);
    if (payload) {
      if (sylva::cuda::encode_cache_entry(*payload) != bytes)
        sylva::fuzz::finding("an entry that decodes does not encode back to its bytes");
    } else if (why.empty()) {
      sylva::fuzz::finding("damage reported without saying what is wrong");
    }
    if (sylva::cuda::decode_cache_entry(sylva::cuda::encode_cache_entry(bytes)) != bytes)
      sylva::fuzz::finding("encode -> decode changed a payload");
    if (std::getenv("SYLVA_FUZZ_VERBOSE") && !payload) std::fprintf(stderr, "fuzz: damaged: %s\n", why.c_str());
  });
  return 0;
}
