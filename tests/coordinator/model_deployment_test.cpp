// The deployment `tandem serve --model DIR [--draft DIR] [--gamma G]`
// implies: the one a YAML naming only those keys gives, printed as YAML that
// reads back to the same deployment, paths quoted where YAML needs it, and
// errors that name the flag.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/error.h"
#include "coordinator/config/model_deployment.h"
#include "coordinator/config/serve_checks.h"

namespace tandem {
namespace {

using ::testing::HasSubstr;

std::string error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const Error& error) {
    return error.what();
  }
  return "no error";
}

TEST(ModelDeployment, IsWhatAFileNamingOnlyTheFlagsKeysGives) {
  const DeploymentConfig pair =
      model_deployment({.model = "models/tiny/target", .draft = "models/tiny/draft"});
  const DeploymentConfig file = parse_deployment(
      "models:\n  target:\n    path: models/tiny/target\n  draft:\n    path: models/tiny/draft\n",
      "pair.yaml");
  EXPECT_EQ(describe(pair), describe(file));
  EXPECT_EQ(pair.speculation.drafter, DrafterKind::model);
  EXPECT_TRUE(pair.speculation.gamma_auto);

  // Without a draft model, the n-gram drafter (a file would need to say so).
  const DeploymentConfig alone = model_deployment({.model = "models/tiny/target", .gamma = "5"});
  EXPECT_FALSE(alone.draft.has_value());
  EXPECT_EQ(alone.speculation.drafter, DrafterKind::ngram);
  EXPECT_FALSE(alone.speculation.gamma_auto);
  EXPECT_EQ(alone.speculation.gamma, 5);
  EXPECT_EQ(describe(alone),
            describe(parse_deployment("models:\n  target:\n    path: models/tiny/target\n"
                                      "speculation:\n  drafter: ngram\n  gamma: 5\n",
                                      "alone.yaml")));
}

TEST(ModelDeployment, PrintedYamlReadsBackToTheSameDeployment) {
  for (const ModelDeploymentFlags& flags :
       {ModelDeploymentFlags{.model = "models/tiny/target", .draft = "models/tiny/draft"},
        ModelDeploymentFlags{.model = "ckpt: #1/it's \"odd\"", .gamma = "0"},
        ModelDeploymentFlags{.model = "true", .draft = "123", .gamma = "64"},
        ModelDeploymentFlags{.model = "/abs/Ünïcödé dir"}}) {
    DeploymentConfig config = model_deployment(flags);
    override_host(config, "0.0.0.0");
    override_port(config, 9000);
    const std::string yaml = model_deployment_yaml(config);
    const DeploymentConfig again = parse_deployment(yaml, "saved.yaml");
    EXPECT_EQ(describe(again), describe(config)) << yaml;
    EXPECT_EQ(again.target.path, flags.model) << yaml;
    EXPECT_EQ(again.server.port, 9000);
    // The summary rides along as comments, every line of it.
    EXPECT_THAT(yaml, HasSubstr("#   server: 0.0.0.0:9000"));
    EXPECT_THAT(yaml, HasSubstr("#   limits: "));
  }
}

TEST(ModelDeployment, ErrorsNameTheFlag) {
  for (const char* gamma : {"65", "-1", "4.0", "", "auto ", "0x4", "1000000000000"}) {
    EXPECT_THAT(error_of([&] { model_deployment({.model = "m", .gamma = gamma}); }),
                HasSubstr("--gamma: expected \"auto\" or an integer in [0, 64], got \"" +
                          std::string(gamma) + "\""));
  }
  const DeploymentConfig missing =
      model_deployment({.model = "models/no-such-target", .draft = "models/tiny/draft"});
  EXPECT_THAT(error_of([&] { check_deployment_can_serve(missing); }),
              HasSubstr("--model: models/no-such-target is not a directory"));
  const DeploymentConfig no_draft =
      model_deployment({.model = TANDEM_SOURCE_DIR "/models/tiny/target", .draft = "nowhere"});
  EXPECT_THAT(error_of([&] { check_deployment_can_serve(no_draft); }),
              HasSubstr("--draft: nowhere is not a directory"));
}

}  // namespace
}  // namespace tandem
