// DeploymentConfig: a YAML deployment (configs/*.yaml) as plain structs, and
// the loader that validates it.
//
// Every knob of a served deployment lives here with its default;
// configs/README.md documents each key. A deployment is validated once, at
// start: an unknown key, a wrong type, a value out of range or a missing
// required key raises Error(invalid_argument) naming the file, the 1-based
// line and the full key path, e.g.
//   deploy.yaml:7: server.port: must be in [0, 65535], got 70000
// Nothing is fixed up later: the structs hold exactly what the server runs.
// Paths are kept as written (relative to the directory tandem starts in).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cluster/layout/cluster_layout.h"  // RankPlacement
#include "coordinator/config/coupling_setting.h"
#include "coordinator/config/prefix_cache_setting.h"
#include "kernels/backend.h"  // BackendKind
#include "kernels/cpu/thread_pool.h"  // cpu::Pinning
#include "workers/speculation/pipeline_policy.h"
#include "workers/speculation/speculation_tuning.h"

namespace tandem {

// server: the HTTP front end.
struct ServerConfig {
  std::string host = "127.0.0.1";
  int port = 8080;  // 0: the OS picks a free port
  int http_threads = 2;
  std::int64_t max_body_bytes = 1 << 20;
  // Connections (coordinator/http/http_server.h): at most this many open,
  // idle keep-alive ones closed after idle_timeout_seconds, a request's
  // header and body due within request_read_timeout_seconds (else 408).
  int max_connections = 512;
  double idle_timeout_seconds = 15;
  double request_read_timeout_seconds = 30;
  double request_timeout_seconds = 600;  // a request's deadline, from arrival
  std::string api_key_env;               // NAME of the variable holding the key; "" = no auth
  double shutdown_grace_seconds = 10;    // how long running requests may finish on SIGTERM
  std::string served_model_name = "tandem";
  std::string log_format = "text";  // the request log's lines: text | json
  // Who may call from where (web_access.h): Host headers answered (nullopt:
  // the bind address and the loopback names), and the browser origins other
  // than the server's own allowed to call it ("*": any).
  std::optional<std::vector<std::string>> allowed_hosts;
  std::vector<std::string> cors_origins;
};

enum class LoadFormat { safetensors, dummy };

// models.target / models.draft: where a model's weights and tokenizer come from.
struct ModelSource {
  std::filesystem::path path;  // Hugging Face directory; may be empty for dummy
  LoadFormat load_format = LoadFormat::safetensors;
  std::filesystem::path shape;      // dummy only: a config.json giving the shape
  std::uint64_t seed = 0;           // dummy only: seed of the random weights
  std::filesystem::path tokenizer;  // directory holding tokenizer.json; = path when not given
};

// placement: which backend runs the models, with how many threads, and
// which ranks of an MPI job take which role (docs/design.md, "Roles"). The
// defaults put every role on rank 0: one process, no launcher needed.
// The ranks and devices are the cluster wing's RankPlacement
// (cluster/layout/cluster_layout.h), which reads them from here as they are.
struct PlacementConfig : RankPlacement {
  // Of weight matrices: f32, bf16 or f16; unset is auto, the checkpoints'
  // own 16-bit dtype or the backend's default (coordinator/models/weight_dtype.h).
  std::optional<Dtype> weight_dtype;
  bool cuda_graphs = true;  // replay repeated step shapes as CUDA graphs (Backend::begin_step_graph)
  bool batch_invariant = false;  // cuda: every matmul on the batch-invariant kernel (Backend::set_batch_invariant)
  int cpu_threads = 0;  // the CPU kernels' threads per process; 0: the CPUs it may run on
  cpu::Pinning cpu_pinning = cpu::Pinning::none;  // cores: each worker thread on one CPU

  bool distributed() const { return world_size() > 1; }
};

// Who proposes the tokens the target verifies (workers/speculation/ has each drafter).
enum class DrafterKind { model, ngram, none };

// speculation: who drafts, and how long the drafted blocks are (gamma).
struct SpeculationConfig {
  DrafterKind drafter =
      DrafterKind::none;     // the loader defaults it to model when a draft is configured
  bool gamma_auto = true;    // choose gamma per step from measured alpha and costs
  int gamma = 0;             // the fixed draft length; meaningful only when !gamma_auto
  int max_gamma = 8;         // the ceiling for auto
  int ngram_min = 1;
  int ngram_max = 4;
  double lenience = 1.0;  // 1 = lossless; < 1 accepts more draft tokens than exact sampling would
  PipelinePolicy pipeline;  // drafting while the target verifies (pipeline_policy.h)
  SpeculationTuning tuning;  // the γ controller's and pipelining's constants (speculation_tuning.h)
};

// scheduler: admission, batching and KV cache sizes.
struct SchedulerConfig {
  int max_running_sessions = 64;
  int max_queued_requests = 256;
  int step_token_budget = 512;  // new tokens per target pass: prefill chunks + verification blocks
  int kv_blocks = 0;            // 0: as many as memory allows
  int block_size = 16;          // tokens per KV block
  int draft_kv_blocks = 0;      // 0: as many as memory allows
  // prefix_caching, prefix_cache_blocks / prefix_cache_fraction
  PrefixCacheSetting prefix_cache;
};

// sampling: the values a request gets for the fields it leaves out.
struct SamplingDefaults {
  double temperature = 1.0;
  double top_p = 1.0;
  int top_k = 0;  // 0: off
  int max_tokens = 16;
  CouplingSetting coupling = CouplingSetting::automatic;  // coupling_setting.h
};

// limits: what a request may ask for.
struct LimitsConfig {
  int max_tokens = 4096;      // the largest max_tokens a request may ask
  int max_prompt_tokens = 0;  // 0: the model's context length
  int max_stop_sequences = 4;
};

// Where the values that start-up checks against this machine came from
// (serve_checks.h): the line of each key given in the file, or the flag
// that overrode a key (`tandem serve --port N`), so that an error names it.
struct ValueOrigins {
  std::string source;                        // the file, as in error messages
  std::map<std::string, int> lines;          // full key path -> 1-based line
  std::map<std::string, std::string> flags;  // full key path -> "--port"
};

struct DeploymentConfig {
  ServerConfig server;
  ModelSource target;
  std::optional<ModelSource> draft;  // absent: no draft model
  PlacementConfig placement;
  SpeculationConfig speculation;
  SchedulerConfig scheduler;
  SamplingDefaults sampling;
  LimitsConfig limits;
  ValueOrigins origins;  // of server.host, server.port and each model's paths
};

// Reads and validates a deployment file. Error(not_found) when it cannot be
// read; Error(invalid_argument) for anything wrong inside it.
DeploymentConfig load_deployment(const std::filesystem::path& file);

// The same from text; source_name stands for the file in error messages.
DeploymentConfig parse_deployment(const std::string& yaml_text, const std::string& source_name);

// A short human summary, one line per section (server, target, draft,
// placement, speculation, scheduler, sampling, limits), each line ending in
// '\n'. Printed by `tandem serve --check-config X.yaml`.
std::string describe(const DeploymentConfig& config);

// Every key a deployment accepts, as full dotted paths ("server.port",
// "models.draft.seed"), in schema order: for documentation checks.
std::vector<std::string> deployment_key_paths();

// The words the YAML uses for each value (backend_name() is in kernels/backend.h).
const char* load_format_name(LoadFormat format);
const char* drafter_name(DrafterKind drafter);

}  // namespace tandem
