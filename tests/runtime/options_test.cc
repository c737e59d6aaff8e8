// ExecutorOptions as one validated tree: the table of optimisations, what
// each needs, without(), reference() and the one error naming every conflict.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "sylva/sylva.h"

namespace sylva {
namespace {

using O = Optimisation;

TEST(Options, TheTableHasEveryOptimisationOnceWithNeedsInsideIt) {
  std::set<std::string> names, flags;
  int row = 0;
  for (const OptimisationInfo& i : optimisation_table()) {
    EXPECT_EQ(static_cast<int>(i.id), row++) << i.name;
    EXPECT_TRUE(names.insert(std::string(i.name)).second) << i.name;
    EXPECT_TRUE(flags.insert(std::string(i.flag)).second) << i.flag;
    EXPECT_EQ(i.flag.substr(0, 5), "--no-") << i.flag;
    EXPECT_FALSE(i.needs.has(i.id)) << i.name << " needs itself";
    EXPECT_FALSE(i.help.empty()) << i.name;
    EXPECT_EQ(optimisation_named(i.name), i.id);
    EXPECT_EQ(optimisation_named(i.flag), i.id);
  }
  EXPECT_EQ(row, kOptimisationCount);
}

TEST(Options, DefaultHasAllOnAndTheReferenceNone) {
  EXPECT_EQ(ExecutorOptions{}.optimisations, Optimisations::all());
  EXPECT_EQ(ExecutorOptions::reference().optimisations, Optimisations::none());
  EXPECT_NO_THROW(ExecutorOptions{}.validate());
  EXPECT_NO_THROW(ExecutorOptions::reference().validate());
  for (const OptimisationInfo& i : optimisation_table()) EXPECT_TRUE(ExecutorOptions{}.on(i.id)) << i.name;
}

TEST(Options, WithoutTurnsOffWhatNeedsItAndEachAblationValidates) {
  const ExecutorOptions fusion_off = ExecutorOptions{}.without(O::fusion);
  EXPECT_FALSE(fusion_off.on(O::fusion));
  EXPECT_FALSE(fusion_off.on(O::trim_fused_zeros));  // needs fusion
  EXPECT_TRUE(fusion_off.on(O::skip_zero_work));
  const ExecutorOptions skip_off = ExecutorOptions{}.without(O::skip_zero_work);
  EXPECT_FALSE(skip_off.on(O::trim_fused_zeros));
  EXPECT_FALSE(skip_off.on(O::children_in_place));
  EXPECT_TRUE(skip_off.on(O::row_windows));
  EXPECT_EQ(dependents(O::row_windows), Optimisations{O::children_in_place});
  EXPECT_TRUE(dependents(O::streaming).empty());
  for (const OptimisationInfo& i : optimisation_table()) {
    const ExecutorOptions o = ExecutorOptions{}.without(i.id);
    EXPECT_NO_THROW(o.validate()) << i.name;
    EXPECT_FALSE(o.on(i.id)) << i.name;
    // Only it and what needs it are off.
    EXPECT_EQ(o.optimisations, Optimisations::all().minus(Optimisations{i.id}.with(dependents(i.id)))) << i.name;
  }
}

TEST(Options, ValidateNamesEveryConflictInOneError) {
  ExecutorOptions o;
  o.optimisations = Optimisations::all().minus({O::fusion, O::row_windows});
  o.threads = -2;
  try {
    o.validate();
    FAIL() << "conflicting options validated";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("trim_fused_zeros is on but needs fusion, which is off"), std::string::npos) << msg;
    EXPECT_NE(msg.find("children_in_place is on but needs row_windows, which is off"), std::string::npos) << msg;
    EXPECT_NE(msg.find("threads is -2"), std::string::npos) << msg;
  }
  o = ExecutorOptions::reference();
  o.optimisations = Optimisations{O::trim_fused_zeros};
  EXPECT_THROW(
      {
        try {
          o.validate();
        } catch (const Error& e) {
          EXPECT_NE(std::string(e.what()).find("needs skip_zero_work, fusion, which are off"), std::string::npos)
              << e.what();
          throw;
        }
      },
      Error);
}

TEST(Options, TheExecutorRefusesConflictingOptions) {
  ParameterSet ps(DType::f32, 1);
  Program p;
  ExecutorOptions o;
  o.optimisations = Optimisations::all().minus({O::fusion});
  EXPECT_THROW(Executor(p, ps, o), Error);
  EXPECT_NO_THROW(Executor(p, ps, o.without(O::fusion)));
}

TEST(Options, UnknownNamesAreAClearError) {
  try {
    optimisation_named("fuse");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no optimisation named 'fuse' (known: skip_zero_work"), std::string::npos)
        << e.what();
  }
}

TEST(Options, ToTextListsEveryOptimisationByGroup) {
  const std::string text = ExecutorOptions{}.without(O::ios).to_text();
  for (const OptimisationInfo& i : optimisation_table())
    EXPECT_NE(text.find(std::string(i.name) + ": " + (i.id == O::ios ? "off" : "on")), std::string::npos)
        << i.name << "\n"
        << text;
  EXPECT_NE(text.find("zero work:"), std::string::npos) << text;
}

}  // namespace
}  // namespace sylva
