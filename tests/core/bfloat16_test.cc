// bfloat16 conversions (sylva/core/bfloat16.h): rounding to nearest even,
// denormals flushed, NaNs quiet, and the vector path the same bits as the
// scalar one.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "sylva/core/bfloat16.h"

namespace sylva {
namespace {

float from_bits(uint32_t u) { return std::bit_cast<float>(u); }

TEST(Bfloat16, RoundsToNearestTiesToEven) {
  // 1 + 2^-8 lies halfway between 1 and 1 + 2^-7: ties go to the even 1.
  EXPECT_EQ(to_bf16(from_bits(0x3f808000u)), 0x3f80u);
  // 1 + 3·2^-8 lies halfway between 1 + 2^-7 (odd) and 1 + 2^-6: to the even one.
  EXPECT_EQ(to_bf16(from_bits(0x3f818000u)), 0x3f82u);
  EXPECT_EQ(to_bf16(from_bits(0x3f808001u)), 0x3f81u);  // just above halfway: up
  EXPECT_EQ(to_bf16(from_bits(0x3f807fffu)), 0x3f80u);  // just below: down
  EXPECT_EQ(to_bf16(-2.5f), 0xc020u);
  EXPECT_EQ(from_bf16(to_bf16(0.15625f)), 0.15625f);  // exact in 8 bits
}

TEST(Bfloat16, SpecialValues) {
  EXPECT_EQ(to_bf16(std::numeric_limits<float>::infinity()), 0x7f80u);
  EXPECT_EQ(to_bf16(-std::numeric_limits<float>::infinity()), 0xff80u);
  EXPECT_EQ(to_bf16(std::numeric_limits<float>::max()), 0x7f80u);  // rounds past the largest bfloat16
  EXPECT_EQ(to_bf16(from_bits(0x7f7f0000u)), 0x7f7fu);             // the largest bfloat16 itself
  EXPECT_EQ(to_bf16(1e-40f), 0x0000u);                             // a denormal: flushed, as vcvtneps2bf16 does
  EXPECT_EQ(to_bf16(-1e-40f), 0x8000u);
  EXPECT_EQ(to_bf16(std::numeric_limits<float>::min()), 0x0080u);  // the smallest normal survives
  EXPECT_EQ(to_bf16(from_bits(0x7f800001u)), 0x7fc0u);             // a signalling NaN comes out quiet
  EXPECT_TRUE(std::isnan(from_bf16(to_bf16(std::nanf("")))));
}

TEST(Bfloat16, VectorAndScalarGiveTheSameBits) {
  std::mt19937 rng(5);
  std::vector<float> x(4099);  // not a multiple of 32 or 16: every tail runs
  for (float& v : x) v = from_bits(rng());  // every pattern: NaNs, denormals, infinities
  std::vector<uint16_t> y(x.size());
  to_bf16(x.data(), y.data(), static_cast<int64_t>(x.size()));
  size_t differ = 0;
  for (size_t i = 0; i < x.size(); ++i) differ += y[i] != to_bf16(x[i]);
  EXPECT_EQ(differ, 0u) << (bf16_vector_conversion() ? "AVX512-BF16 path" : "scalar path");
  std::vector<float> back(x.size());
  from_bf16(y.data(), back.data(), static_cast<int64_t>(y.size()));
  for (size_t i = 0; i < x.size(); ++i)
    ASSERT_EQ(std::bit_cast<uint32_t>(back[i]), static_cast<uint32_t>(y[i]) << 16) << i;
}

}  // namespace
}  // namespace sylva
