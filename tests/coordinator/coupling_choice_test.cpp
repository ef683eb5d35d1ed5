// The rule that turns a request's speculation.coupling and the deployment's
// sampling.coupling into the coupling a request runs (coupling_choice.h),
// over every combination of its inputs.
#include "coordinator/api/coupling_choice.h"

#include <gtest/gtest.h>

#include "common/error.h"

namespace tandem::api {
namespace {

constexpr CouplingSetting kRejection = CouplingSetting::rejection;
constexpr CouplingSetting kGumbel = CouplingSetting::gumbel;
constexpr CouplingSetting kAuto = CouplingSetting::automatic;

Coupling resolve(CouplingSetting requested, CouplingSetting deployed, bool seeded, float lenience = 1.0f) {
  return resolve_coupling(
      {.requested = requested, .deployed = deployed, .seeded = seeded, .lenience = lenience});
}

TEST(CouplingChoice, AutoEverywhereIsGumbelExactlyWhenSeeded) {
  EXPECT_EQ(resolve(kAuto, kAuto, /*seeded=*/true), Coupling::gumbel);
  EXPECT_EQ(resolve(kAuto, kAuto, /*seeded=*/false), Coupling::rejection);
}

TEST(CouplingChoice, AnExplicitRequestWinsOverTheDeploymentAndTheSeed) {
  for (const CouplingSetting deployed : {kRejection, kGumbel, kAuto}) {
    for (const bool seeded : {false, true}) {
      SCOPED_TRACE(std::string(coupling_setting_name(deployed)) + (seeded ? " seeded" : " unseeded"));
      EXPECT_EQ(resolve(kRejection, deployed, seeded), Coupling::rejection);
      EXPECT_EQ(resolve(kGumbel, deployed, seeded), Coupling::gumbel);
    }
  }
}

TEST(CouplingChoice, AnAutoRequestTakesAnExplicitDeploymentSetting) {
  for (const bool seeded : {false, true}) {
    EXPECT_EQ(resolve(kAuto, kRejection, seeded), Coupling::rejection);
    EXPECT_EQ(resolve(kAuto, kGumbel, seeded), Coupling::gumbel);
  }
}

TEST(CouplingChoice, LenienceBelowOneKeepsAutoOnRejection) {
  EXPECT_EQ(resolve(kAuto, kAuto, /*seeded=*/true, 0.5f), Coupling::rejection);
  EXPECT_EQ(resolve(kRejection, kAuto, /*seeded=*/true, 0.5f), Coupling::rejection);
  EXPECT_EQ(resolve(kAuto, kAuto, /*seeded=*/true, 1.0f), Coupling::gumbel);
}

TEST(CouplingChoice, AnExplicitGumbelUnderLenienceIsRefusedNamingTheField) {
  for (const bool seeded : {false, true}) {
    try {
      resolve(kGumbel, kAuto, seeded, 0.9f);
      FAIL() << "gumbel under lenience 0.9 was accepted";
    } catch (const ApiError& error) {
      EXPECT_EQ(error.status, 400);
      EXPECT_EQ(error.param, "speculation.coupling");
      EXPECT_NE(error.message.find("lenience"), std::string::npos) << error.message;
    }
  }
}

TEST(CouplingChoice, ADeployedGumbelUnderLenienceIsAnInternalError) {
  // The config loader refuses such a deployment; a hand-built one is not
  // quietly downgraded to rejection.
  EXPECT_THROW(resolve(kAuto, kGumbel, /*seeded=*/true, 0.5f), Error);
}

TEST(CouplingChoice, ReadsTheThreeWordsAndRefusesOthersNamingTheField) {
  EXPECT_EQ(read_coupling(Json("rejection")), kRejection);
  EXPECT_EQ(read_coupling(Json("gumbel")), kGumbel);
  EXPECT_EQ(read_coupling(Json("auto")), kAuto);
  for (const Json& bad : {Json("automatic"), Json(""), Json(1), Json::array({"gumbel"})}) {
    SCOPED_TRACE(bad.dump());
    try {
      read_coupling(bad);
      FAIL() << "accepted";
    } catch (const ApiError& error) {
      EXPECT_EQ(error.status, 400);
      EXPECT_EQ(error.param, "speculation.coupling");
    }
  }
}

}  // namespace
}  // namespace tandem::api
