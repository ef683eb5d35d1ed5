// Reading a deployment: the schema (which keys each section takes, their
// defaults and ranges) and the checks that span keys. The strict reading of
// single values is ConfigSection's job (config_section.h); the speculation:
// section, the largest, has a file of its own (speculation_section.cpp).
#include "coordinator/config/deployment_config.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>

#include <climits>
#include <fstream>
#include <memory>
#include <sstream>

#include "common/error.h"
#include "coordinator/config/compute_choice.h"
#include "coordinator/config/config_section.h"
#include "coordinator/config/speculation_section.h"
#include "coordinator/config/web_access.h"

namespace tandem {
namespace {

using config::ConfigSection;
using config::Interval;
using Keys = std::vector<std::string>;

const Keys kTopKeys = {"server",    "models",   "placement", "speculation",
                       "scheduler", "sampling", "limits"};
const Keys kServerKeys = {"host",
                          "port",
                          "http_threads",
                          "max_body_bytes",
                          "max_connections",
                          "idle_timeout_seconds",
                          "request_read_timeout_seconds",
                          "request_timeout_seconds",
                          "api_key_env",
                          "shutdown_grace_seconds",
                          "served_model_name",
                          "log_format",
                          "allowed_hosts",
                          "cors_origins"};
const Keys kModelsKeys = {"target", "draft"};
const Keys kModelKeys = {"path", "load_format", "shape", "seed", "tokenizer"};
const Keys kPlacementKeys = {"backend",          "weight_dtype",   "cuda_graphs",
                             "batch_invariant",  "cpu_threads",    "cpu_pinning",
                             "coordinator_rank",
                             "draft_rank",       "draft_device",   "target_ranks",
                             "target_devices",   "step_timeout_seconds"};
const Keys kSchedulerKeys = {"max_running_sessions", "max_queued_requests",
                             "step_token_budget",    "kv_blocks",
                             "block_size",           "draft_kv_blocks",
                             "prefix_caching",       "prefix_cache_blocks",
                             "prefix_cache_fraction"};
const Keys kSamplingKeys = {"temperature", "top_p", "top_k", "max_tokens", "coupling"};
const Keys kLimitsKeys = {"max_tokens", "max_prompt_tokens", "max_stop_sequences"};

constexpr std::int64_t kIntMax = INT_MAX;

// [A-Za-z_][A-Za-z0-9_]*: what a POSIX shell accepts as a variable name.
bool is_env_var_name(const std::string& name) {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) return false;
  for (const char c : name) {
    const bool ok =
        (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
    if (!ok) return false;
  }
  return true;
}

// server.allowed_hosts and server.cors_origins, each entry in the form the
// gate compares (web_access.h).
void read_web_access(const ConfigSection& section, ServerConfig& server) {
  if (auto hosts = section.text_list("allowed_hosts")) {
    if (hosts->empty())
      section.fail("allowed_hosts", "must list at least one host (leave the key out for the default)");
    for (std::size_t i = 0; i < hosts->size(); ++i) {
      std::string problem;
      const auto host = web::allowed_host_entry((*hosts)[i], problem);
      if (!host) section.fail("allowed_hosts", "allowed_hosts[" + std::to_string(i) + "]: " + problem);
      (*hosts)[i] = *host;
    }
    server.allowed_hosts = std::move(hosts);
  }
  server.cors_origins = section.text_list("cors_origins").value_or(std::vector<std::string>{});
  for (std::size_t i = 0; i < server.cors_origins.size(); ++i) {
    std::string& origin = server.cors_origins[i];
    if (origin == web::kAnyEntry) continue;
    const auto normalized = web::normalized_origin(origin);
    if (!normalized || origin.ends_with(":")) {
      section.fail("cors_origins", "cors_origins[" + std::to_string(i) +
                                       "]: expected an origin as a browser sends it, scheme://host[:port] "
                                       "without a path (e.g. http://localhost:3000), or \"*\", got \"" +
                                       origin + "\"");
    }
    origin = *normalized;
  }
}

ServerConfig read_server(const ConfigSection& section) {
  section.allow_only(kServerKeys);
  ServerConfig server;
  server.host = section.text("host", server.host);
  server.port = static_cast<int>(section.integer("port", server.port, 0, 65535));
  server.http_threads =
      static_cast<int>(section.integer("http_threads", server.http_threads, 1, 64));
  server.max_body_bytes =
      section.integer("max_body_bytes", server.max_body_bytes, 1024, std::int64_t{1} << 30);
  server.max_connections =
      static_cast<int>(section.integer("max_connections", server.max_connections, 1, 1000000));
  const Interval timeout_range{.low = 0.001, .high = 86400};
  server.idle_timeout_seconds =
      section.number("idle_timeout_seconds", server.idle_timeout_seconds, timeout_range);
  server.request_read_timeout_seconds = section.number(
      "request_read_timeout_seconds", server.request_read_timeout_seconds, timeout_range);
  server.request_timeout_seconds =
      section.number("request_timeout_seconds", server.request_timeout_seconds,
                     Interval{.low = 0, .low_open = true});
  // The key's value is the variable's name, never the key itself: a config
  // file gets copied and committed, an environment variable does not.
  server.api_key_env =
      section.scalar("api_key_env", "the name of an environment variable").value_or("");
  if (!server.api_key_env.empty() && !is_env_var_name(server.api_key_env)) {
    section.fail("api_key_env",
                 "expected the NAME of an environment variable ([A-Za-z_][A-Za-z0-9_]*, "
                 "e.g. TANDEM_API_KEY) that holds the key, got \"" +
                     server.api_key_env + "\"");
  }
  server.shutdown_grace_seconds =
      section.number("shutdown_grace_seconds", server.shutdown_grace_seconds, Interval{.low = 0});
  server.served_model_name = section.text("served_model_name", server.served_model_name);
  server.log_format = section.word("log_format", server.log_format, {"text", "json"});
  read_web_access(section, server);
  return server;
}

ModelSource read_model(const ConfigSection& section) {
  section.allow_only(kModelKeys);
  ModelSource model;
  const bool dummy =
      section.word("load_format", "safetensors", {"safetensors", "dummy"}) == "dummy";
  model.load_format = dummy ? LoadFormat::dummy : LoadFormat::safetensors;
  if (!dummy && !section.has("path")) {
    section.fail(
        "path",
        "required key missing (a Hugging Face model directory: config.json, *.safetensors)");
  }
  if (dummy && !section.has("shape")) {
    section.fail("shape",
                 "required when load_format is dummy (a config.json giving the shape, "
                 "e.g. configs/shapes/llama-3-8b.json)",
                 "load_format");
  }
  for (const char* dummy_only : {"shape", "seed"}) {
    if (!dummy && section.has(dummy_only)) {
      section.fail(dummy_only,
                   "only used with load_format: dummy; remove it or set load_format: dummy");
    }
  }
  model.path = section.text("path", "");
  model.shape = section.text("shape", "");
  model.seed = static_cast<std::uint64_t>(section.integer("seed", 0, 0, INT64_MAX));
  model.tokenizer = section.text("tokenizer", model.path.string());
  return model;
}

}  // namespace

namespace {

PlacementConfig read_placement(const ConfigSection& section, bool has_draft) {
  if (section.has("threads"))
    section.fail("threads", "was renamed cpu_threads (and cpu_pinning chooses where they run)");
  section.allow_only(kPlacementKeys);
  PlacementConfig placement;
  // The rules themselves are choose_compute's, shared with the CLI's flags.
  const std::optional<std::string> dtype =
      section.has("weight_dtype") ? std::optional(section.text("weight_dtype", "")) : std::nullopt;
  const ComputeResult compute = choose_compute(section.text("backend", "cpu"), dtype);
  if (compute.problem) {
    section.fail(compute.problem->field == ComputeProblem::Field::backend ? "backend"
                                                                          : "weight_dtype",
                 compute.problem->message);
  }
  placement.backend = compute.choice.backend;
  placement.weight_dtype = compute.choice.weight_dtype;
  placement.cuda_graphs = section.word("cuda_graphs", "true", {"true", "false"}) == "true";
  placement.batch_invariant =
      section.word("batch_invariant", "false", {"true", "false"}) == "true";
  placement.cpu_threads =
      static_cast<int>(section.integer("cpu_threads", placement.cpu_threads, 0, 1024));
  placement.cpu_pinning = section.word("cpu_pinning", "none", {"none", "cores"}) == "cores"
                              ? cpu::Pinning::cores
                              : cpu::Pinning::none;
  constexpr int kMaxRank = 65535;
  placement.coordinator_rank = static_cast<int>(section.integer("coordinator_rank", 0, 0, kMaxRank));
  placement.draft_rank = static_cast<int>(
      section.integer("draft_rank", placement.coordinator_rank, 0, kMaxRank));
  placement.draft_device = static_cast<int>(section.integer("draft_device", 0, 0, 1023));
  const auto ranks =
      section.integer_list("target_ranks", {placement.coordinator_rank}, 0, kMaxRank);
  placement.target_ranks.assign(ranks.begin(), ranks.end());
  const auto devices = section.integer_list("target_devices", {}, 0, 1023);
  placement.target_devices.assign(devices.begin(), devices.end());
  placement.step_timeout_seconds =
      section.number("step_timeout_seconds", 30, Interval{0, 86400, true, false});
  placement.source = config::located(section.source(), section.line_of("target_ranks"), "placement");

  const std::vector<int>& targets = placement.target_ranks;
  const auto contains = [&](int rank) {
    return std::find(targets.begin(), targets.end(), rank) != targets.end();
  };
  if (targets.empty()) section.fail("target_ranks", "must name at least one rank");
  for (size_t i = 0; i < targets.size(); ++i) {
    if (std::count(targets.begin(), targets.end(), targets[i]) > 1) {
      section.fail("target_ranks", "rank " + std::to_string(targets[i]) + " appears twice");
    }
  }
  if (!placement.target_devices.empty() && placement.target_devices.size() != targets.size()) {
    section.fail("target_devices", "needs one device per target rank (" +
                                       std::to_string(targets.size()) + "), got " +
                                       std::to_string(placement.target_devices.size()));
  }
  // The coordinator's engine thread cannot also be one shard among several:
  // it holds the whole target or none of it.
  if (contains(placement.coordinator_rank) && targets.size() > 1) {
    section.fail("target_ranks", "includes the coordinator's rank " +
                                     std::to_string(placement.coordinator_rank) +
                                     "; a tensor-parallel group (more than one rank) must use "
                                     "other ranks");
  }
  if (contains(placement.draft_rank) && placement.draft_rank != placement.coordinator_rank) {
    section.fail("draft_rank", "rank " + std::to_string(placement.draft_rank) +
                                   " is also a target rank; the draft needs its own rank "
                                   "(or the coordinator's)");
  }
  if (placement.draft_is_remote() && !has_draft) {
    section.fail("draft_rank", "puts the draft model on rank " +
                                   std::to_string(placement.draft_rank) +
                                   ", but models.draft is not configured");
  }
  // Every rank of the job has a role: no holes.
  std::vector<int> used = targets;
  used.push_back(placement.coordinator_rank);
  if (has_draft) used.push_back(placement.draft_rank);
  for (int rank = 0; rank < placement.world_size(); ++rank) {
    if (std::find(used.begin(), used.end(), rank) == used.end()) {
      section.fail("target_ranks", "rank " + std::to_string(rank) +
                                       " has no role (ranks run from 0 to " +
                                       std::to_string(placement.world_size() - 1) +
                                       " without gaps)");
    }
  }
  return placement;
}

// scheduler.prefix_caching and its cap: a number of blocks or a fraction of
// each pool, not both (which one would win is nobody's guess).
PrefixCacheSetting read_prefix_cache(const ConfigSection& section) {
  PrefixCacheSetting setting;
  setting.enabled = section.word("prefix_caching", "true", {"true", "false"}) == "true";
  const bool blocks = section.has("prefix_cache_blocks");
  const bool fraction = section.has("prefix_cache_fraction");
  if (blocks && fraction) {
    section.fail("prefix_cache_fraction",
                 "give prefix_cache_blocks or prefix_cache_fraction, not both");
  }
  for (const char* cap : {"prefix_cache_blocks", "prefix_cache_fraction"}) {
    if (!setting.enabled && section.has(cap))
      section.fail(cap, "only used with prefix_caching: true; remove it or turn caching on");
  }
  if (blocks) {
    setting.max_evictable =
        static_cast<int>(section.integer("prefix_cache_blocks", 0, 0, kIntMax));
  }
  if (fraction) {
    setting.pool_fraction = section.number("prefix_cache_fraction", 1,
                                           Interval{.low = 0, .high = 1, .low_open = true});
  }
  return setting;
}

SchedulerConfig read_scheduler(const ConfigSection& section) {
  section.allow_only(kSchedulerKeys);
  SchedulerConfig scheduler;
  const auto read = [&](const char* key, int fallback, std::int64_t low, std::int64_t high) {
    return static_cast<int>(section.integer(key, fallback, low, high));
  };
  scheduler.max_running_sessions =
      read("max_running_sessions", scheduler.max_running_sessions, 1, 4096);
  scheduler.max_queued_requests =
      read("max_queued_requests", scheduler.max_queued_requests, 0, 1000000);
  scheduler.step_token_budget = read("step_token_budget", scheduler.step_token_budget, 16, kIntMax);
  scheduler.kv_blocks = read("kv_blocks", scheduler.kv_blocks, 0, kIntMax);
  scheduler.block_size = read("block_size", scheduler.block_size, 1, 1024);
  scheduler.draft_kv_blocks = read("draft_kv_blocks", scheduler.draft_kv_blocks, 0, kIntMax);
  scheduler.prefix_cache = read_prefix_cache(section);
  return scheduler;
}

SamplingDefaults read_sampling(const ConfigSection& section) {
  section.allow_only(kSamplingKeys);
  SamplingDefaults sampling;
  sampling.temperature =
      section.number("temperature", sampling.temperature, Interval{.low = 0, .high = 2});
  sampling.top_p =
      section.number("top_p", sampling.top_p, Interval{.low = 0, .high = 1, .low_open = true});
  sampling.top_k = static_cast<int>(section.integer("top_k", sampling.top_k, 0, kIntMax));
  sampling.max_tokens =
      static_cast<int>(section.integer("max_tokens", sampling.max_tokens, 1, kIntMax));
  const std::string coupling = section.word("coupling", "auto", {"rejection", "gumbel", "auto"});
  sampling.coupling = coupling == "rejection" ? CouplingSetting::rejection
                      : coupling == "gumbel"  ? CouplingSetting::gumbel
                                              : CouplingSetting::automatic;
  return sampling;
}

LimitsConfig read_limits(const ConfigSection& section) {
  section.allow_only(kLimitsKeys);
  LimitsConfig limits;
  limits.max_tokens =
      static_cast<int>(section.integer("max_tokens", limits.max_tokens, 1, kIntMax));
  limits.max_prompt_tokens =
      static_cast<int>(section.integer("max_prompt_tokens", limits.max_prompt_tokens, 0, kIntMax));
  limits.max_stop_sequences =
      static_cast<int>(section.integer("max_stop_sequences", limits.max_stop_sequences, 0, 64));
  return limits;
}

// Notes the lines of the keys given among keys, for checks made after parsing.
void note_lines(const ConfigSection& section, const Keys& keys, ValueOrigins& origins) {
  for (const std::string& key : keys) {
    if (section.has(key)) origins.lines[section.path_of(key)] = section.line_of(key);
  }
}

// Where each document of a YAML stream starts (the parser's events).
class DocumentStarts final : public YAML::EventHandler {
 public:
  std::vector<YAML::Mark> starts;
  void OnDocumentStart(const YAML::Mark& mark) override { starts.push_back(mark); }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

// The one document of a deployment file; syntax errors keep their line.
// Documents are counted by hand, two at most, not with YAML::LoadAll: on
// some malformed text (",|") yaml-cpp 0.7's parser hands out the same empty
// document forever without moving on, and LoadAll collects them until
// memory runs out.
YAML::Node parse_document(const std::string& text, const std::string& source) {
  DocumentStarts documents;
  YAML::Node root;
  try {
    std::istringstream stream(text);
    YAML::Parser parser(stream);
    while (documents.starts.size() < 2 && parser.HandleNextDocument(documents)) {
    }
    root = YAML::Load(text);
  } catch (const YAML::Exception& error) {
    throw Error(ErrorKind::invalid_argument,
                config::located(source, error.mark.is_null() ? 0 : error.mark.line + 1,
                                "YAML syntax error: " + error.msg));
  }
  const std::vector<YAML::Mark>& starts = documents.starts;
  if (starts.size() == 2 && starts[1].pos == starts[0].pos) {
    throw Error(ErrorKind::invalid_argument,
                config::located(source, starts[0].line + 1,
                                "YAML syntax error: the parser cannot read on from here"));
  }
  if (starts.size() == 2) {
    // The second document's mark is its first key; point at the --- above it.
    int line = starts[1].line;
    while (line > 0 && !config::line_of_text(text, line).starts_with("---")) --line;
    throw Error(ErrorKind::invalid_argument,
                config::located(source, line + 1,
                                "a deployment file holds one YAML document, found more "
                                "(remove the extra ---)"));
  }
  if (root.IsNull()) {
    throw Error(ErrorKind::invalid_argument,
                source +
                    ": the file is empty; a deployment needs at least models.target.path "
                    "(see configs/README.md and configs/local.yaml)");
  }
  return root;
}

}  // namespace

DeploymentConfig parse_deployment(const std::string& yaml_text, const std::string& source_name) {
  const ConfigSection top = ConfigSection::root(parse_document(yaml_text, source_name), source_name,
                                                std::make_shared<const std::string>(yaml_text));
  top.allow_only(kTopKeys);
  DeploymentConfig deployment;
  deployment.origins.source = source_name;
  const ConfigSection server = top.section_or_empty("server");
  deployment.server = read_server(server);
  note_lines(server, {"host", "port", "api_key_env"}, deployment.origins);

  const ConfigSection models = top.section_or_empty("models");
  models.allow_only(kModelsKeys);
  const std::optional<ConfigSection> target = models.section("target");
  if (!target) models.fail("target", "required section missing");
  deployment.target = read_model(*target);
  note_lines(*target, kModelKeys, deployment.origins);
  if (const std::optional<ConfigSection> draft = models.section("draft")) {
    deployment.draft = read_model(*draft);
    note_lines(*draft, kModelKeys, deployment.origins);
  }

  deployment.placement =
      read_placement(top.section_or_empty("placement"), deployment.draft.has_value());
  deployment.speculation =
      config::read_speculation(top.section_or_empty("speculation"), deployment.draft.has_value());
  deployment.scheduler = read_scheduler(top.section_or_empty("scheduler"));
  const ConfigSection sampling = top.section_or_empty("sampling");
  deployment.sampling = read_sampling(sampling);
  deployment.limits = read_limits(top.section_or_empty("limits"));
  if (deployment.sampling.max_tokens > deployment.limits.max_tokens) {
    sampling.fail("max_tokens", "the default (" + std::to_string(deployment.sampling.max_tokens) +
                                    ") must be <= limits.max_tokens (" +
                                    std::to_string(deployment.limits.max_tokens) + ")");
  }
  // Lenience loosens Algorithm 1's accept test; the Gumbel coupling has no
  // such test to loosen (a draft is kept iff it is the target's own token).
  if (deployment.sampling.coupling == CouplingSetting::gumbel && deployment.speculation.lenience < 1.0) {
    std::ostringstream lenience;
    lenience << deployment.speculation.lenience;
    sampling.fail("coupling", "gumbel cannot run with speculation.lenience below 1 (" + lenience.str() +
                                  "): lenience loosens rejection sampling's test; use rejection or "
                                  "auto, or set lenience to 1");
  }
  return deployment;
}

DeploymentConfig load_deployment(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  require(std::filesystem::is_regular_file(file) && in.good(), ErrorKind::not_found,
          file.string() +
              ": cannot read the deployment config (is the path right? "
              "configs/local.yaml is the default)");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_deployment(text.str(), file.string());
}

std::vector<std::string> deployment_key_paths() {
  std::vector<std::string> paths;
  const auto add = [&](const std::string& section, const Keys& keys) {
    for (const std::string& key : keys) paths.push_back(section + "." + key);
  };
  add("server", kServerKeys);
  add("models.target", kModelKeys);
  add("models.draft", kModelKeys);
  add("placement", kPlacementKeys);
  add("speculation", config::speculation_keys());
  add("scheduler", kSchedulerKeys);
  add("sampling", kSamplingKeys);
  add("limits", kLimitsKeys);
  return paths;
}

const char* load_format_name(LoadFormat format) {
  switch (format) {
    case LoadFormat::safetensors: return "safetensors";
    case LoadFormat::dummy: return "dummy";
  }
  return "?";
}

const char* drafter_name(DrafterKind drafter) {
  switch (drafter) {
    case DrafterKind::model: return "model";
    case DrafterKind::ngram: return "ngram";
    case DrafterKind::none: return "none";
  }
  return "?";
}

}  // namespace tandem
