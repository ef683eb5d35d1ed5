// Tests of coordinator/config: YAML deployments parse into DeploymentConfig,
// defaults fill what is left out, and every kind of mistake is rejected with
// the file, the line and the full key path.
#include "coordinator/config/deployment_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <utility>

#include "common/error.h"
#include "tests/coordinator/deployment_error.h"
#include "tests/coordinator/target_only_yaml.h"

namespace tandem {
namespace {

using test_support::error_of;

using ::testing::EndsWith;
using ::testing::StartsWith;

const std::filesystem::path kSourceDir = TANDEM_SOURCE_DIR;

// Lines 1-3 of most test documents: the one required key.
using test_support::kTargetOnlyYaml;

std::string read_text(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}


std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST(DeploymentConfig, LocalYamlIsTheTinyPairOnLoopback) {
  const DeploymentConfig config = load_deployment(kSourceDir / "configs/local.yaml");
  EXPECT_EQ(config.server.host, "127.0.0.1");
  EXPECT_EQ(config.server.port, 8080);
  EXPECT_EQ(config.server.api_key_env, "");
  EXPECT_EQ(config.target.path, "models/tiny/target");
  EXPECT_EQ(config.target.load_format, LoadFormat::safetensors);
  EXPECT_EQ(config.target.tokenizer, "models/tiny/target");
  ASSERT_TRUE(config.draft.has_value());
  EXPECT_EQ(config.draft->path, "models/tiny/draft");
  EXPECT_EQ(config.placement.backend, BackendKind::cpu);
  EXPECT_EQ(config.speculation.drafter, DrafterKind::model);
  EXPECT_TRUE(config.speculation.gamma_auto);
  EXPECT_EQ(config.speculation.lenience, 1.0);
  // The paths are relative to the repo root and must name real checkpoints.
  for (const ModelSource& model : {config.target, *config.draft}) {
    EXPECT_TRUE(std::filesystem::exists(kSourceDir / model.path / "config.json")) << model.path;
    EXPECT_TRUE(std::filesystem::exists(kSourceDir / model.tokenizer / "tokenizer.json"))
        << model.tokenizer;
  }
}

TEST(DeploymentConfig, LocalYamlWritesOutEveryKeyWithAComment) {
  const std::string text = read_text(kSourceDir / "configs/local.yaml");
  const YAML::Node root = YAML::Load(text);
  for (const std::string& path : deployment_key_paths()) {
    // shape and seed are errors without load_format: dummy, so local.yaml cannot hold them.
    if (path.ends_with(".shape") || path.ends_with(".seed")) continue;
    // The two caps exclude each other; local.yaml gives the fraction.
    if (path == "scheduler.prefix_cache_blocks") continue;
    bool present = true;
    YAML::Node node = root;
    std::istringstream parts(path);
    for (std::string part; present && std::getline(parts, part, '.');) {
      const YAML::Node child = std::as_const(node)[part];  // const: reading must not insert
      present = child.IsDefined() && (child.IsMap() || child.IsScalar() || child.IsSequence());
      node.reset(child);
    }
    EXPECT_TRUE(present) << path << " is not in configs/local.yaml";
  }
  for (const std::string& line : lines_of(text)) {
    if (line.find(':') != std::string::npos && line.find_first_not_of(' ') != line.find('#')) {
      EXPECT_NE(line.find(" # "), std::string::npos) << "a key without a comment: " << line;
    }
  }
}

TEST(DeploymentConfig, ReadmeDocumentsEveryKey) {
  const std::string readme = read_text(kSourceDir / "configs/README.md");
  for (std::string path : deployment_key_paths()) {
    // models.draft takes the same keys as models.target, documented once.
    if (path.starts_with("models.draft.")) path.replace(0, 12, "models.target");
    EXPECT_NE(readme.find("`" + path + "`"), std::string::npos)
        << path << " is not in configs/README.md";
  }
}

TEST(DeploymentConfig, ExamplesParse) {
  int examples = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kSourceDir / "configs/examples")) {
    if (entry.path().extension() != ".yaml") continue;
    SCOPED_TRACE(entry.path().string());
    const DeploymentConfig config = load_deployment(entry.path());
    EXPECT_EQ(lines_of(describe(config)).size(), 8u);
    ++examples;
  }
  EXPECT_GE(examples, 2);
}

TEST(DeploymentConfig, DefaultsFillEverythingButTheTarget) {
  const DeploymentConfig config = parse_deployment(kTargetOnlyYaml, "deploy.yaml");
  EXPECT_EQ(config.server.host, "127.0.0.1");
  EXPECT_EQ(config.server.port, 8080);
  EXPECT_EQ(config.server.http_threads, 2);
  EXPECT_EQ(config.server.max_body_bytes, 1048576);
  EXPECT_EQ(config.server.request_timeout_seconds, 600);
  EXPECT_EQ(config.server.api_key_env, "");
  EXPECT_EQ(config.server.shutdown_grace_seconds, 10);
  EXPECT_EQ(config.server.served_model_name, "tandem");
  EXPECT_EQ(config.server.max_connections, 512);
  EXPECT_EQ(config.server.idle_timeout_seconds, 15);
  EXPECT_EQ(config.server.request_read_timeout_seconds, 30);
  EXPECT_EQ(config.target.path, "m");
  EXPECT_EQ(config.target.load_format, LoadFormat::safetensors);
  EXPECT_EQ(config.target.tokenizer, "m");
  EXPECT_EQ(config.target.seed, 0u);
  EXPECT_FALSE(config.draft.has_value());
  EXPECT_EQ(config.placement.backend, BackendKind::cpu);
  EXPECT_EQ(config.placement.cpu_threads, 0);
  EXPECT_EQ(config.placement.cpu_pinning, cpu::Pinning::none);
  EXPECT_EQ(config.speculation.drafter, DrafterKind::none);  // no draft model configured
  EXPECT_TRUE(config.speculation.gamma_auto);
  EXPECT_EQ(config.speculation.max_gamma, 8);
  EXPECT_EQ(config.speculation.tuning.prior_alpha, 0.6);
  EXPECT_EQ(config.speculation.tuning.prior_weight, 4);
  EXPECT_EQ(config.speculation.tuning.probe_every, 8);
  EXPECT_EQ(config.speculation.tuning.max_probe_every, 64);
  EXPECT_EQ(config.speculation.tuning.guard_explore_every, 64);
  EXPECT_EQ(config.speculation.tuning.guard_min_steps, 8);
  EXPECT_EQ(config.speculation.tuning.ahead_probe_every, 32);
  EXPECT_EQ(config.speculation.ngram_min, 1);
  EXPECT_EQ(config.speculation.ngram_max, 4);
  EXPECT_EQ(config.speculation.lenience, 1.0);
  EXPECT_EQ(config.scheduler.max_running_sessions, 64);
  EXPECT_EQ(config.scheduler.max_queued_requests, 256);
  EXPECT_EQ(config.scheduler.step_token_budget, 512);
  EXPECT_EQ(config.scheduler.kv_blocks, 0);
  EXPECT_EQ(config.scheduler.block_size, 16);
  EXPECT_EQ(config.scheduler.draft_kv_blocks, 0);
  EXPECT_EQ(config.sampling.temperature, 1.0);
  EXPECT_EQ(config.sampling.top_p, 1.0);
  EXPECT_EQ(config.sampling.top_k, 0);
  EXPECT_EQ(config.sampling.max_tokens, 16);
  EXPECT_EQ(config.sampling.coupling, CouplingSetting::automatic);
  EXPECT_EQ(config.limits.max_tokens, 4096);
  EXPECT_EQ(config.limits.max_prompt_tokens, 0);
  EXPECT_EQ(config.limits.max_stop_sequences, 4);
}

TEST(DeploymentConfig, EmptySectionsTakeTheirDefaults) {
  const DeploymentConfig config = parse_deployment(kTargetOnlyYaml + "server:\nsampling:\n", "deploy.yaml");
  EXPECT_EQ(config.server.port, 8080);
  EXPECT_EQ(config.sampling.max_tokens, 16);
}

TEST(DeploymentConfig, SamplingCouplingTakesItsThreeWords) {
  for (const CouplingSetting setting :
       {CouplingSetting::rejection, CouplingSetting::gumbel, CouplingSetting::automatic}) {
    const std::string word = coupling_setting_name(setting);
    const DeploymentConfig config =
        parse_deployment(kTargetOnlyYaml + "sampling:\n  coupling: " + word + "\n", "deploy.yaml");
    EXPECT_EQ(config.sampling.coupling, setting) << word;
    EXPECT_NE(describe(config).find("coupling " + word + "\n"), std::string::npos) << describe(config);
  }
}

TEST(DeploymentConfig, GumbelCouplingRefusesLenienceNamingTheKeyAndLine) {
  EXPECT_EQ(error_of(kTargetOnlyYaml + "speculation:\n  lenience: 0.5\nsampling:\n  temperature: 1\n  coupling: gumbel\n"),
            "deploy.yaml:8: sampling.coupling: gumbel cannot run with speculation.lenience below 1 (0.5): "
            "lenience loosens rejection sampling's test; use rejection or auto, or set lenience to 1");
  // auto and rejection run under lenience (auto resolves to rejection there).
  for (const std::string word : {"auto", "rejection"}) {
    const DeploymentConfig config = parse_deployment(
        kTargetOnlyYaml + "speculation:\n  lenience: 0.5\nsampling:\n  coupling: " + word + "\n", "deploy.yaml");
    EXPECT_EQ(config.speculation.lenience, 0.5);
  }
}

TEST(DeploymentConfig, DraftModelMakesModelTheDefaultDrafter) {
  const DeploymentConfig config =
      parse_deployment(kTargetOnlyYaml + "    tokenizer: tok\n  draft:\n    path: d\n", "deploy.yaml");
  ASSERT_TRUE(config.draft.has_value());
  EXPECT_EQ(config.draft->path, "d");
  EXPECT_EQ(config.draft->tokenizer, "d");
  EXPECT_EQ(config.target.tokenizer, "tok");
  EXPECT_EQ(config.speculation.drafter, DrafterKind::model);
}

TEST(DeploymentConfig, ReadsGammaAsAutoOrAFixedLength) {
  const auto gamma_of = [](const std::string& value) {
    return parse_deployment(kTargetOnlyYaml + "speculation:\n  drafter: ngram\n  gamma: " + value + "\n",
                            "x.yaml")
        .speculation;
  };
  EXPECT_TRUE(gamma_of("auto").gamma_auto);
  EXPECT_FALSE(gamma_of("5").gamma_auto);
  EXPECT_EQ(gamma_of("5").gamma, 5);
  EXPECT_EQ(gamma_of("0").gamma, 0);
  EXPECT_EQ(gamma_of("64").gamma, 64);
}

TEST(DeploymentConfig, DummyModelsNeedAShapeButNoPath) {
  const DeploymentConfig config = parse_deployment(
      "models:\n  target:\n    load_format: dummy\n    shape: s.json\n    seed: 7\n",
      "deploy.yaml");
  EXPECT_EQ(config.target.load_format, LoadFormat::dummy);
  EXPECT_EQ(config.target.shape, "s.json");
  EXPECT_EQ(config.target.seed, 7u);
  EXPECT_TRUE(config.target.path.empty());
}

TEST(DeploymentConfig, KeepsTheApiKeyVariableNameWithoutReadingIt) {
  const DeploymentConfig config = parse_deployment(
      kTargetOnlyYaml + "server:\n  api_key_env: TANDEM_UNSET_KEY_VAR_42\n", "deploy.yaml");
  EXPECT_EQ(config.server.api_key_env, "TANDEM_UNSET_KEY_VAR_42");
}

TEST(DeploymentConfig, DescribeGivesOneLinePerSection) {
  DeploymentConfig config = load_deployment(kSourceDir / "configs/local.yaml");
  const std::vector<std::string> lines = lines_of(describe(config));
  const std::vector<std::string> sections = {
      "server:",      "target:",    "draft:",    "placement:",
      "speculation:", "scheduler:", "sampling:", "limits:"};
  ASSERT_EQ(lines.size(), sections.size());
  for (std::size_t i = 0; i < lines.size(); ++i)
    EXPECT_TRUE(lines[i].starts_with(sections[i])) << lines[i];
  EXPECT_NE(lines[0].find("127.0.0.1:8080"), std::string::npos) << lines[0];
  EXPECT_NE(lines[2].find("models/tiny/draft"), std::string::npos) << lines[2];
  EXPECT_NE(lines[4].find("lossless"), std::string::npos) << lines[4];
  // The γ controller's tuning, defaults filled in.
  EXPECT_NE(lines[4].find("prior alpha 0.6 weighing 4 positions, probes every 8..64 steps, "
                          "guard exploring 1 in 64 after 8 steps"),
            std::string::npos)
      << lines[4];
  EXPECT_NE(lines[4].find("ahead probe every 32 steps"), std::string::npos) << lines[4];

  config.draft.reset();
  config.speculation.drafter = DrafterKind::ngram;
  config.speculation.lenience = 0.5;
  const std::vector<std::string> changed = lines_of(describe(config));
  EXPECT_EQ(changed[2], "draft: none");
  EXPECT_NE(changed[4].find("not lossless"), std::string::npos) << changed[4];
  EXPECT_NE(changed[4].find("n-gram"), std::string::npos) << changed[4];
}

// --- errors, each with its exact location -----------------------------------

TEST(DeploymentConfigErrors, OutOfRangeNamesFileLineAndKeyPath) {
  EXPECT_EQ(error_of(kTargetOnlyYaml + "server:\n  host: 0.0.0.0\n  port: 70000\n"),
            "deploy.yaml:6: server.port: must be in [0, 65535], got 70000");
}

TEST(DeploymentConfigErrors, ConnectionLimitsAreRangeChecked) {
  EXPECT_EQ(error_of(kTargetOnlyYaml + "server:\n  max_connections: 0\n"),
            "deploy.yaml:5: server.max_connections: must be in [1, 1000000], got 0");
  EXPECT_EQ(error_of(kTargetOnlyYaml + "server:\n  port: 1\n  idle_timeout_seconds: 0\n"),
            "deploy.yaml:6: server.idle_timeout_seconds: must be in [0.001, 86400], got 0");
  EXPECT_EQ(error_of(kTargetOnlyYaml + "server:\n  request_read_timeout_seconds: -1\n"),
            "deploy.yaml:5: server.request_read_timeout_seconds: must be in [0.001, 86400], got -1");
  const DeploymentConfig config = parse_deployment(
      kTargetOnlyYaml + "server:\n  max_connections: 64\n  idle_timeout_seconds: 2.5\n"
                "  request_read_timeout_seconds: 5\n",
      "deploy.yaml");
  EXPECT_EQ(config.server.max_connections, 64);
  EXPECT_EQ(config.server.idle_timeout_seconds, 2.5);
  EXPECT_EQ(config.server.request_read_timeout_seconds, 5);
}

TEST(DeploymentConfigErrors, UnknownKeyListsTheKnownOnesAndSuggestsOne) {
  const std::string message = error_of(kTargetOnlyYaml + "server:\n  prot: 80\n");
  EXPECT_THAT(message,
              StartsWith("deploy.yaml:5: server.prot: unknown key (known keys: host, port, "
                         "http_threads, max_body_bytes,"))
      << message;
  EXPECT_THAT(message, EndsWith("; did you mean port?")) << message;
  EXPECT_EQ(
      error_of("sever:\n  port: 80\n" + kTargetOnlyYaml),
      "deploy.yaml:1: sever: unknown key (known keys: server, models, placement, speculation, "
      "scheduler, sampling, limits); did you mean server?");
  EXPECT_THAT(error_of(kTargetOnlyYaml + "    weights: w\n"),
              StartsWith("deploy.yaml:4: models.target.weights: unknown key"));
  EXPECT_THAT(error_of(kTargetOnlyYaml + "  verifier:\n    path: v\n"),
              StartsWith("deploy.yaml:4: models.verifier: unknown key"));
}

TEST(DeploymentConfigErrors, WrongTypeQuotesWhatWasWritten) {
  EXPECT_EQ(error_of(kTargetOnlyYaml + "scheduler:\n  max_running_sessions: many\n"),
            "deploy.yaml:5: scheduler.max_running_sessions: expected an integer, got \"many\"");
  EXPECT_EQ(error_of(kTargetOnlyYaml + "scheduler:\n  max_running_sessions: 1.5\n"),
            "deploy.yaml:5: scheduler.max_running_sessions: expected an integer, got \"1.5\"");
}

TEST(DeploymentConfigErrors, MissingTargetSection) {
  EXPECT_EQ(error_of("server:\n  port: 80\n"),
            "deploy.yaml: models.target: required section missing");
  EXPECT_EQ(error_of("server:\n  port: 80\nmodels:\n  draft:\n    path: d\n"),
            "deploy.yaml:3: models.target: required section missing");
}

TEST(DeploymentConfigErrors, MissingRequiredKeys) {
  EXPECT_THAT(error_of("models:\n  target:\n    tokenizer: t\n"),
              StartsWith("deploy.yaml:2: models.target.path: required key missing"));
  EXPECT_THAT(error_of(kTargetOnlyYaml + "  draft:\n"),
              StartsWith("deploy.yaml:4: models.draft.path: required key missing"));
  // The line is that of load_format, the key that makes shape required.
  EXPECT_THAT(error_of("models:\n  target:\n    path: p\n    load_format: dummy\n"),
              StartsWith("deploy.yaml:4: models.target.shape: required when load_format is dummy"));
}

TEST(DeploymentConfigErrors, SectionsMustBeMaps) {
  EXPECT_EQ(
      error_of("server: 5\n" + kTargetOnlyYaml),
      "deploy.yaml:1: server: expected a map of keys (an indented block under server:), got \"5\"");
  EXPECT_THAT(error_of("models:\n  - target\n"),
              StartsWith("deploy.yaml:1: models: expected a map of keys"));
  EXPECT_THAT(error_of("models:\n  target: models/tiny/target\n"),
              StartsWith("deploy.yaml:2: models.target: expected a map of keys"));
  EXPECT_THAT(error_of(kTargetOnlyYaml + "limits: [1, 2]\n"), EndsWith("got a list"));
}

TEST(DeploymentConfigErrors, TheDocumentMustBeOneMap) {
  EXPECT_THAT(error_of(""), StartsWith("deploy.yaml: the file is empty"));
  EXPECT_THAT(error_of("# only a comment\n\n"), StartsWith("deploy.yaml: the file is empty"));
  EXPECT_THAT(error_of("- server\n- models\n"),
              StartsWith("deploy.yaml:1: the top level must be a map"));
  EXPECT_THAT(error_of("just words\n"), StartsWith("deploy.yaml:1: the top level must be a map"));
  EXPECT_THAT(error_of(kTargetOnlyYaml + "---\n" + kTargetOnlyYaml),
              StartsWith("deploy.yaml:4: a deployment file holds one YAML document"));
}

// yaml-cpp 0.7's LoadAll never returned on this text: its parser handed out
// the same empty document forever, collected until memory ran out (found by
// tests/fuzz/deployment_config_fuzzer).
TEST(DeploymentConfigErrors, TextTheParserCannotReadPastIsASyntaxError) {
  EXPECT_THAT(error_of(",|"), StartsWith("deploy.yaml:1: YAML syntax error"));
  EXPECT_THAT(error_of(kTargetOnlyYaml + ",|"), StartsWith("deploy.yaml:"));
}

TEST(DeploymentConfigErrors, SyntaxErrorsKeepTheirLine) {
  EXPECT_THAT(error_of(kTargetOnlyYaml + "server:\n\tport: 80\n"),
              StartsWith("deploy.yaml:5: YAML syntax error"));
  EXPECT_THAT(error_of(kTargetOnlyYaml + "server:\n  port: 80\n   host: x\n"),
              StartsWith("deploy.yaml:6: YAML syntax error"));
  // yaml-cpp 0.7 lets a quote left open swallow the rest of the file into one value.
  EXPECT_EQ(error_of("models:\n  target:\n    path: \"models/tiny\nserver:\n  port: 1\n"),
            "deploy.yaml:3: models.target.path: the quoted value does not end on its line "
            "(is a closing quote missing?)");
  EXPECT_EQ(error_of(kTargetOnlyYaml + "server:\n  host: 'it''s\n"),
            "deploy.yaml:5: server.host: the quoted value does not end on its line "
            "(is a closing quote missing?)");
  // Quotes that do close, with escaped quotes inside, are fine.
  const DeploymentConfig quoted = parse_deployment(
      kTargetOnlyYaml + "server:\n  host: 'it''s'\n  served_model_name: \"a \\\"b\\\"\"  # c\n",
      "deploy.yaml");
  EXPECT_EQ(quoted.server.host, "it's");
  EXPECT_EQ(quoted.server.served_model_name, "a \"b\"");
  EXPECT_EQ(error_of(kTargetOnlyYaml + "server:\n  host: |\n    two\n    lines\n"),
            "deploy.yaml:5: server.host: must be one line without control characters");
}

TEST(DeploymentConfigErrors, DuplicateKeysNameTheFirstLine) {
  EXPECT_EQ(error_of(kTargetOnlyYaml + "server:\n  port: 80\n  host: h\n  port: 81\n"),
            "deploy.yaml:7: server.port: duplicate key (first given on line 5)");
  EXPECT_EQ(error_of(kTargetOnlyYaml + "models:\n  draft:\n    path: d\n"),
            "deploy.yaml:4: models: duplicate key (first given on line 1)");
}

TEST(DeploymentConfigErrors, CrossFieldChecksNameTheKey) {
  EXPECT_THAT(
      error_of(kTargetOnlyYaml + "speculation:\n  drafter: model\n"),
      StartsWith(
          "deploy.yaml:5: speculation.drafter: is model, but models.draft is not configured"));
  EXPECT_EQ(error_of(kTargetOnlyYaml + "speculation:\n  drafter: ngram\n  ngram_min: 5\n  ngram_max: 3\n"),
            "deploy.yaml:6: speculation.ngram_min: must be <= speculation.ngram_max (3), got 5");
  EXPECT_EQ(error_of(kTargetOnlyYaml + "speculation:\n  ngram_min: 6\n"),
            "deploy.yaml:5: speculation.ngram_min: must be <= speculation.ngram_max (4), got 6");
  EXPECT_EQ(error_of(kTargetOnlyYaml + "speculation:\n  gamma: 3\n"),
            "deploy.yaml:5: speculation.gamma: must be 0 or auto when speculation.drafter is none, "
            "got 3");
  EXPECT_EQ(
      error_of(kTargetOnlyYaml + "sampling:\n  max_tokens: 100\nlimits:\n  max_tokens: 50\n"),
      "deploy.yaml:5: sampling.max_tokens: the default (100) must be <= limits.max_tokens (50)");
  EXPECT_THAT(error_of(kTargetOnlyYaml + "    shape: s.json\n"),
              StartsWith("deploy.yaml:4: models.target.shape: only used with load_format: dummy"));
}

TEST(DeploymentConfig, CudaBackendWeightDtypeIsAutoUnlessToldOtherwise) {
  if (!cuda_backend_built()) {
    // A build without nvcc names the key and says why it cannot serve it.
    const std::string message = error_of(kTargetOnlyYaml + "placement:\n  backend: cuda\n");
    EXPECT_THAT(message, StartsWith("deploy.yaml:5: placement.backend: ")) << message;
    EXPECT_NE(message.find("no CUDA backend"), std::string::npos) << message;
    return;
  }
  const auto gpu = parse_deployment(kTargetOnlyYaml + "placement:\n  backend: cuda\n", "deploy.yaml");
  EXPECT_EQ(gpu.placement.backend, BackendKind::cuda);
  EXPECT_EQ(gpu.placement.weight_dtype, std::nullopt);  // auto: decided by the checkpoints
  const auto half = parse_deployment(
      kTargetOnlyYaml + "placement:\n  backend: cuda\n  weight_dtype: fp16\n", "deploy.yaml");
  EXPECT_EQ(half.placement.weight_dtype, Dtype::f16);
  const auto cpu = parse_deployment(kTargetOnlyYaml, "deploy.yaml");
  EXPECT_EQ(cpu.placement.weight_dtype, std::nullopt);
  EXPECT_TRUE(gpu.placement.cuda_graphs);
  const auto op_by_op = parse_deployment(
      kTargetOnlyYaml + "placement:\n  backend: cuda\n  cuda_graphs: false\n", "deploy.yaml");
  EXPECT_FALSE(op_by_op.placement.cuda_graphs);
  EXPECT_FALSE(gpu.placement.batch_invariant);
  const auto invariant = parse_deployment(
      kTargetOnlyYaml + "placement:\n  backend: cuda\n  batch_invariant: true\n", "deploy.yaml");
  EXPECT_TRUE(invariant.placement.batch_invariant);
}

TEST(DeploymentConfig, CpuBackendStoresTheWeightDtypeAskedOrAuto) {
  const auto bf16 = parse_deployment(kTargetOnlyYaml + "placement:\n  weight_dtype: bf16\n", "deploy.yaml");
  EXPECT_EQ(bf16.placement.backend, BackendKind::cpu);
  EXPECT_EQ(bf16.placement.weight_dtype, Dtype::bf16);
  const auto half = parse_deployment(
      kTargetOnlyYaml + "placement:\n  backend: cpu\n  weight_dtype: fp16\n", "deploy.yaml");
  EXPECT_EQ(half.placement.weight_dtype, Dtype::f16);
  const auto f32 =
      parse_deployment(kTargetOnlyYaml + "placement:\n  weight_dtype: fp32\n", "deploy.yaml");
  EXPECT_EQ(f32.placement.weight_dtype, Dtype::f32);
  const auto automatic =
      parse_deployment(kTargetOnlyYaml + "placement:\n  weight_dtype: auto\n", "deploy.yaml");
  EXPECT_EQ(automatic.placement.weight_dtype, std::nullopt);
  EXPECT_EQ(error_of(kTargetOnlyYaml + "placement:\n  weight_dtype: int8\n"),
            "deploy.yaml:5: placement.weight_dtype: must be auto, bf16, fp16 or fp32, got \"int8\"");
}

TEST(DeploymentConfigErrors, LineNumbersCountTheWholeFile) {
  // A bad value deep in the full default file: the line is where it is written.
  std::string text = read_text(kSourceDir / "configs/local.yaml");
  const std::size_t at = text.find("  block_size: 16");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 16, "  block_size: 2048");
  const std::size_t line =
      1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n');
  EXPECT_EQ(error_of(text), "deploy.yaml:" + std::to_string(line) +
                                ": scheduler.block_size: must be in [1, 1024], got 2048");
}

TEST(DeploymentConfigErrors, LoadNamesThePath) {
  try {
    load_deployment(kSourceDir / "configs/no-such-deployment.yaml");
    FAIL() << "a missing file must not load";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::not_found);
    EXPECT_NE(std::string(error.what()).find("no-such-deployment.yaml"), std::string::npos);
  }
  const std::filesystem::path file =
      std::filesystem::temp_directory_path() / "tandem_bad_deploy_test.yaml";
  std::ofstream(file) << kTargetOnlyYaml << "server:\n  port: -1\n";
  try {
    load_deployment(file);
    ADD_FAILURE() << "a bad port must not load";
  } catch (const Error& error) {
    EXPECT_EQ(std::string(error.what()),
              file.string() + ":5: server.port: must be in [0, 65535], got -1");
  }
  std::filesystem::remove(file);
}

}  // namespace
}  // namespace tandem
