// Tests of coordinator/config, one value at a time: every key's bad values
// are refused with the file, the line and the full key path, and the ends of
// every range are accepted and read back.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "coordinator/config/deployment_config.h"
#include "tests/coordinator/deployment_error.h"
#include "tests/coordinator/target_only_yaml.h"

namespace tandem {
namespace {

using test_support::error_of;

// Lines 1-3 of every test document: the one required key.
using test_support::kTargetOnlyYaml;

// --- one bad value at a time --------------------------------------------------

struct BadValue {
  std::string section;  // "server", or "models.target" for a model key
  std::string key;
  std::string value;    // as written in YAML
  std::string message;  // what follows "FILE:LINE: section.key: "
};

// The document for one case and the line its bad key lands on.
std::pair<std::string, int> document_with(const BadValue& bad) {
  if (bad.section == "models.target")
    return {kTargetOnlyYaml + "    " + bad.key + ": " + bad.value + "\n", 4};
  return {kTargetOnlyYaml + bad.section + ":\n  " + bad.key + ": " + bad.value + "\n", 5};
}

TEST(DeploymentConfigErrors, RejectsEachBadValueWithItsKeyAndLine) {
  const std::string no_quotes = " (write numbers without quotes)";
  const std::vector<BadValue> cases = {
      {"server", "port", "70000", "must be in [0, 65535], got 70000"},
      {"server", "port", "-1", "must be in [0, 65535], got -1"},
      {"server", "port", "80.5", "expected an integer, got \"80.5\""},
      {"server", "port", "0x50", "expected an integer, got \"0x50\""},
      {"server", "port", "+-80", "expected an integer, got \"+-80\""},
      {"server", "port", "1_000", "expected an integer, got \"1_000\""},
      {"server", "port", "\"8080\"",
       "expected an integer, got the quoted string \"8080\"" + no_quotes},
      {"server", "port", "[80]", "expected an integer, got a list"},
      {"server", "port", "{a: 1}", "expected an integer, got a map"},
      {"server", "port", "", "expected an integer, got an empty value"},
      {"server", "http_threads", "0", "must be in [1, 64], got 0"},
      {"server", "http_threads", "65", "must be in [1, 64], got 65"},
      {"server", "max_body_bytes", "1023", "must be in [1024, 1073741824], got 1023"},
      {"server", "max_body_bytes", "1073741825", "must be in [1024, 1073741824], got 1073741825"},
      {"server", "request_timeout_seconds", "0", "must be > 0, got 0"},
      {"server", "request_timeout_seconds", "soon", "expected a number, got \"soon\""},
      {"server", "request_timeout_seconds", ".inf", "expected a number, got \".inf\""},
      {"server", "shutdown_grace_seconds", "-1", "must be >= 0, got -1"},
      {"server", "host", "\"\"", "must not be empty"},
      {"server", "host", "[a, b]", "expected a string, got a list"},
      {"server", "served_model_name", "~", "expected a string, got an empty value"},
      {"server", "api_key_env", "MY-KEY",
       "expected the NAME of an environment variable ([A-Za-z_][A-Za-z0-9_]*, e.g. TANDEM_API_KEY) "
       "that holds the key, got \"MY-KEY\""},
      {"server", "api_key_env", "1KEY",
       "expected the NAME of an environment variable ([A-Za-z_][A-Za-z0-9_]*, e.g. TANDEM_API_KEY) "
       "that holds the key, got \"1KEY\""},
      {"models.target", "load_format", "gguf", "must be one of safetensors, dummy, got \"gguf\""},
      {"models.target", "tokenizer", "[a]", "expected a string, got a list"},
      {"models.target", "seed", "3",
       "only used with load_format: dummy; remove it or set load_format: dummy"},
      {"placement", "cpu_threads", "1025", "must be in [0, 1024], got 1025"},
      {"placement", "cpu_threads", "-1", "must be in [0, 1024], got -1"},
      {"placement", "cpu_threads", "many", "expected an integer, got \"many\""},
      {"placement", "cpu_pinning", "numa", "must be one of none, cores, got \"numa\""},
      {"placement", "threads", "2",
       "was renamed cpu_threads (and cpu_pinning chooses where they run)"},
      {"placement", "backend", "tpu", "must be cpu or cuda, got \"tpu\""},
      {"placement", "weight_dtype", "int4", "must be auto, bf16, fp16 or fp32, got \"int4\""},
      {"placement", "cuda_graphs", "sometimes", "must be one of true, false, got \"sometimes\""},
      {"placement", "batch_invariant", "yes", "must be one of true, false, got \"yes\""},
      {"speculation", "drafter", "magic", "must be one of model, ngram, none, got \"magic\""},
      {"speculation", "gamma", "fast", "expected \"auto\" or an integer, got \"fast\""},
      {"speculation", "gamma", "65", "must be in [0, 64], got 65"},
      {"speculation", "gamma", "-1", "must be in [0, 64], got -1"},
      {"speculation", "gamma", "[1, 2]", "expected \"auto\" or an integer, got a list"},
      {"speculation", "max_gamma", "0", "must be in [1, 64], got 0"},
      {"speculation", "prior_alpha", "1", "must be in (0, 1), got 1"},
      {"speculation", "prior_alpha", "0", "must be in (0, 1), got 0"},
      {"speculation", "prior_weight", "0", "must be > 0, got 0"},
      {"speculation", "prior_weight", "-1", "must be > 0, got -1"},
      {"speculation", "probe_every", "0", "must be in [1, 1000000], got 0"},
      {"speculation", "probe_every", "65",
       "must be <= speculation.max_probe_every (64), got 65"},
      {"speculation", "max_probe_every", "7", "must be >= speculation.probe_every (8), got 7"},
      {"speculation", "max_probe_every", "1000001", "must be in [1, 1000000], got 1000001"},
      {"speculation", "guard_explore_every", "1", "must be in [2, 1000000], got 1"},
      {"speculation", "guard_explore_every", "often", "expected an integer, got \"often\""},
      {"speculation", "guard_min_steps", "0", "must be in [1, 1000000], got 0"},
      {"speculation", "ahead_probe_every", "0", "must be in [1, 1000000], got 0"},
      {"speculation", "ahead_probe_every", "2.5", "expected an integer, got \"2.5\""},
      {"speculation", "ngram_min", "0", "must be in [1, 32], got 0"},
      {"speculation", "ngram_max", "33", "must be in [1, 32], got 33"},
      {"speculation", "lenience", "0", "must be in (0, 1], got 0"},
      {"speculation", "lenience", "1.01", "must be in (0, 1], got 1.01"},
      {"scheduler", "max_running_sessions", "0", "must be in [1, 4096], got 0"},
      {"scheduler", "max_running_sessions", "4097", "must be in [1, 4096], got 4097"},
      {"scheduler", "max_queued_requests", "1000001", "must be in [0, 1000000], got 1000001"},
      {"scheduler", "max_queued_requests", "1e6", "expected an integer, got \"1e6\""},
      {"scheduler", "step_token_budget", "15", "must be >= 16, got 15"},
      {"scheduler", "kv_blocks", "-1", "must be >= 0, got -1"},
      {"scheduler", "kv_blocks", "99999999999999999999",
       "must be in [0, 2147483647], got 99999999999999999999"},
      {"scheduler", "block_size", "0", "must be in [1, 1024], got 0"},
      {"scheduler", "draft_kv_blocks", "-3", "must be >= 0, got -3"},
      {"sampling", "temperature", "2.5", "must be in [0, 2], got 2.5"},
      {"sampling", "temperature", "-0.1", "must be in [0, 2], got -0.1"},
      {"sampling", "temperature", "hot", "expected a number, got \"hot\""},
      {"sampling", "temperature", "+-1", "expected a number, got \"+-1\""},
      {"sampling", "temperature", "1.0.0", "expected a number, got \"1.0.0\""},
      {"sampling", "temperature", "\"0.7\"",
       "expected a number, got the quoted string \"0.7\" (write numbers without quotes)"},
      {"sampling", "top_p", "0", "must be in (0, 1], got 0"},
      {"sampling", "top_k", "-1", "must be >= 0, got -1"},
      {"sampling", "max_tokens", "0", "must be >= 1, got 0"},
      {"sampling", "coupling", "gumbell", "must be one of rejection, gumbel, auto, got \"gumbell\""},
      {"sampling", "coupling", "Auto", "must be one of rejection, gumbel, auto, got \"Auto\""},
      {"limits", "max_tokens", "0", "must be >= 1, got 0"},
      {"limits", "max_tokens", "99999999999", "must be in [1, 2147483647], got 99999999999"},
      {"limits", "max_prompt_tokens", "-1", "must be >= 0, got -1"},
      {"limits", "max_stop_sequences", "65", "must be in [0, 64], got 65"},
  };
  for (const BadValue& bad : cases) {
    const auto [yaml, line] = document_with(bad);
    EXPECT_EQ(error_of(yaml), "deploy.yaml:" + std::to_string(line) + ": " + bad.section + "." +
                                  bad.key + ": " + bad.message)
        << yaml;
  }
}

// The other side of each range: the extreme values are accepted and read back.
TEST(DeploymentConfig, AcceptsTheEndsOfEachRange) {
  struct Good {
    std::string section, key, value;
    std::function<double(const DeploymentConfig&)> read;
    double expected;
  };
  const std::vector<Good> cases = {
      {"server", "port", "0", [](const auto& c) { return c.server.port; }, 0},
      {"server", "port", "65535", [](const auto& c) { return c.server.port; }, 65535},
      {"server", "port", "+443", [](const auto& c) { return c.server.port; }, 443},
      {"server", "max_body_bytes", "1073741824",
       [](const auto& c) { return c.server.max_body_bytes; }, 1 << 30},
      {"server", "request_timeout_seconds", "0.5",
       [](const auto& c) { return c.server.request_timeout_seconds; }, 0.5},
      {"server", "shutdown_grace_seconds", "0",
       [](const auto& c) { return c.server.shutdown_grace_seconds; }, 0},
      {"placement", "cpu_threads", "1024", [](const auto& c) { return c.placement.cpu_threads; }, 1024},
      {"placement", "cpu_threads", "0", [](const auto& c) { return c.placement.cpu_threads; }, 0},
      {"placement", "cpu_pinning", "cores",
       [](const auto& c) { return c.placement.cpu_pinning == cpu::Pinning::cores ? 1 : 0; }, 1},
      {"placement", "cpu_pinning", "none",
       [](const auto& c) { return c.placement.cpu_pinning == cpu::Pinning::cores ? 1 : 0; }, 0},
      {"speculation", "max_gamma", "64", [](const auto& c) { return c.speculation.max_gamma; }, 64},
      {"speculation", "prior_alpha", "0.999",
       [](const auto& c) { return c.speculation.tuning.prior_alpha; }, 0.999},
      {"speculation", "prior_weight", "0.5",
       [](const auto& c) { return c.speculation.tuning.prior_weight; }, 0.5},
      {"speculation", "probe_every", "1",
       [](const auto& c) { return c.speculation.tuning.probe_every; }, 1},
      {"speculation", "probe_every", "64",
       [](const auto& c) { return c.speculation.tuning.probe_every; }, 64},
      {"speculation", "max_probe_every", "8",
       [](const auto& c) { return c.speculation.tuning.max_probe_every; }, 8},
      {"speculation", "max_probe_every", "1000000",
       [](const auto& c) { return c.speculation.tuning.max_probe_every; }, 1000000},
      {"speculation", "guard_explore_every", "2",
       [](const auto& c) { return c.speculation.tuning.guard_explore_every; }, 2},
      {"speculation", "guard_min_steps", "1",
       [](const auto& c) { return c.speculation.tuning.guard_min_steps; }, 1},
      {"speculation", "ahead_probe_every", "1",
       [](const auto& c) { return c.speculation.tuning.ahead_probe_every; }, 1},
      {"speculation", "lenience", "1", [](const auto& c) { return c.speculation.lenience; }, 1},
      {"speculation", "lenience", "1e-3", [](const auto& c) { return c.speculation.lenience; },
       1e-3},
      {"scheduler", "max_queued_requests", "0",
       [](const auto& c) { return c.scheduler.max_queued_requests; }, 0},
      {"scheduler", "step_token_budget", "16",
       [](const auto& c) { return c.scheduler.step_token_budget; }, 16},
      {"scheduler", "block_size", "1024", [](const auto& c) { return c.scheduler.block_size; },
       1024},
      {"sampling", "temperature", "0", [](const auto& c) { return c.sampling.temperature; }, 0},
      {"sampling", "temperature", "2", [](const auto& c) { return c.sampling.temperature; }, 2},
      {"sampling", "top_p", "1", [](const auto& c) { return c.sampling.top_p; }, 1},
      {"sampling", "top_k", "40", [](const auto& c) { return c.sampling.top_k; }, 40},
      {"sampling", "top_p", ".5", [](const auto& c) { return c.sampling.top_p; }, 0.5},
      {"sampling", "top_p", "+0.25", [](const auto& c) { return c.sampling.top_p; }, 0.25},
      {"limits", "max_stop_sequences", "0",
       [](const auto& c) { return c.limits.max_stop_sequences; }, 0},
      {"limits", "max_stop_sequences", "64",
       [](const auto& c) { return c.limits.max_stop_sequences; }, 64},
  };
  for (const Good& good : cases) {
    const std::string yaml = kTargetOnlyYaml + good.section + ":\n  " + good.key + ": " + good.value + "\n";
    EXPECT_EQ(good.read(parse_deployment(yaml, "deploy.yaml")), good.expected) << yaml;
  }
}

}  // namespace
}  // namespace tandem
