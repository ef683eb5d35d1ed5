// describe(DeploymentConfig): the one-line-per-section summary that
// `tandem serve --check-config` prints, so that a user sees what the defaults
// filled in before a server starts.
#include <optional>
#include <sstream>

#include "coordinator/config/deployment_config.h"

namespace tandem {
namespace {

std::string number(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

std::string describe_model(const ModelSource& model) {
  std::string line;
  switch (model.load_format) {
    case LoadFormat::safetensors: line = model.path.string() + " (safetensors)"; break;
    case LoadFormat::dummy:
      line = "dummy weights shaped by " + model.shape.string() + ", seed " +
             std::to_string(model.seed);
      break;
  }
  return line + ", tokenizer " + (model.tokenizer.empty() ? "none" : model.tokenizer.string());
}

std::string describe_drafter(const SpeculationConfig& speculation) {
  switch (speculation.drafter) {
    case DrafterKind::model: return "draft model";
    case DrafterKind::ngram:
      return "n-gram (n " + std::to_string(speculation.ngram_min) + ".." +
             std::to_string(speculation.ngram_max) + ")";
    case DrafterKind::none: return "none";
  }
  return "?";
}

// What steers an automatic γ: its ceiling and SpeculationTuning.
std::string describe_gamma_control(const SpeculationConfig& speculation) {
  const SpeculationTuning& tuning = speculation.tuning;
  return "<= " + std::to_string(speculation.max_gamma) + ", prior alpha " +
         number(tuning.prior_alpha) + " weighing " + number(tuning.prior_weight) +
         " positions, probes every " + std::to_string(tuning.probe_every) + ".." +
         std::to_string(tuning.max_probe_every) + " steps, guard exploring 1 in " +
         std::to_string(tuning.guard_explore_every) + " after " +
         std::to_string(tuning.guard_min_steps) + " steps";
}

std::string blocks(int count) {
  return count == 0 ? "auto" : std::to_string(count);
}

// ", one process" or the ranks of each role in an MPI job.
std::string describe_roles(const PlacementConfig& placement, bool has_draft) {
  if (!placement.distributed()) return ", one process";
  std::string ranks;
  for (int rank : placement.target_ranks) ranks += (ranks.empty() ? "" : ", ") + std::to_string(rank);
  std::string out = ", " + std::to_string(placement.world_size()) + " ranks: coordinator " +
                    std::to_string(placement.coordinator_rank);
  if (has_draft) out += ", draft " + std::to_string(placement.draft_rank);
  out += ", target TP " + std::to_string(placement.tensor_parallel()) + " on [" + ranks + "]";
  out += ", step timeout " + number(placement.step_timeout_seconds) + " s";
  return out;
}

}  // namespace

std::string describe(const DeploymentConfig& config) {
  const ServerConfig& server = config.server;
  const SpeculationConfig& speculation = config.speculation;
  const SchedulerConfig& scheduler = config.scheduler;
  std::ostringstream out;
  out << "server: " << server.host << ":" << server.port
      << (server.port == 0 ? " (a free port)" : "") << " serving \"" << server.served_model_name
      << "\", " << server.http_threads << " HTTP threads, bodies <= " << server.max_body_bytes
      << " bytes, " << number(server.request_timeout_seconds) << " s timeout, "
      << number(server.shutdown_grace_seconds) << " s shutdown grace, "
      << (server.api_key_env.empty() ? "no API key" : "API key from $" + server.api_key_env)
      << ", request log as " << server.log_format << "\n";
  out << "target: " << describe_model(config.target) << "\n";
  out << "draft: " << (config.draft ? describe_model(*config.draft) : "none") << "\n";
  const std::optional<Dtype> dtype = config.placement.weight_dtype;
  const std::string weights =
      dtype ? std::string(dtype_name(*dtype)) + " weights" : std::string("weight dtype auto");
  out << "placement: " << backend_name(config.placement.backend) << " (" << weights
      << (config.placement.backend == BackendKind::cuda
              ? std::string(config.placement.cuda_graphs ? ", CUDA graphs" : ", no CUDA graphs") +
                    (config.placement.batch_invariant ? ", batch-invariant)" : ")")
              : std::string(")"))
      << ", "
      << (config.placement.cpu_threads == 0
              ? "a CPU thread per CPU it may run on"
              : std::to_string(config.placement.cpu_threads) +
                    (config.placement.cpu_threads == 1 ? " CPU thread" : " CPU threads"))
      << (config.placement.cpu_pinning == cpu::Pinning::cores ? " pinned to cores" : "")
      << describe_roles(config.placement, config.draft.has_value()) << "\n";
  out << "speculation: drafter " << describe_drafter(speculation) << ", gamma "
      << (speculation.gamma_auto ? "auto (" + describe_gamma_control(speculation) + ")"
                                 : std::to_string(speculation.gamma))
      << ", "
      << (speculation.lenience == 1.0
              ? "lossless"
              : "lenience " + number(speculation.lenience) + " (not lossless)")
      << ", pipelined drafting " << pipeline_mode_name(speculation.pipeline.mode)
      << " (ahead probe every " << speculation.tuning.ahead_probe_every << " steps)\n";
  out << "scheduler: " << scheduler.max_running_sessions << " running sessions, "
      << scheduler.max_queued_requests << " queued, " << scheduler.step_token_budget
      << " tokens per step, KV blocks of " << scheduler.block_size
      << " tokens: " << blocks(scheduler.kv_blocks) << " target, "
      << blocks(scheduler.draft_kv_blocks) << " draft; prefix caching "
      << describe(scheduler.prefix_cache) << "\n";
  out << "sampling: temperature " << number(config.sampling.temperature) << ", top_p "
      << number(config.sampling.top_p) << ", top_k "
      << (config.sampling.top_k == 0 ? "off" : std::to_string(config.sampling.top_k))
      << ", max_tokens " << config.sampling.max_tokens << ", coupling "
      << coupling_setting_name(config.sampling.coupling) << "\n";
  out << "limits: max_tokens " << config.limits.max_tokens << ", prompts up to "
      << (config.limits.max_prompt_tokens == 0
              ? "the model's context"
              : std::to_string(config.limits.max_prompt_tokens) + " tokens")
      << ", " << config.limits.max_stop_sequences << " stop sequences\n";
  return out.str();
}

}  // namespace tandem
