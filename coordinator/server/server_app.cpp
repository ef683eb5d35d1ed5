#include "coordinator/server/server_app.h"

#include <omp.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <thread>

#include "common/error.h"
#include "common/log_line.h"
#include "cluster/peer_channel.h"
#include "cluster/remote_drafter.h"
#include "cluster/remote_target.h"
#include "coordinator/http/http_server.h"
#include "coordinator/metrics/server_metrics.h"
#include "coordinator/models/load_model.h"
#include "coordinator/engine_loop/engine_loop.h"
#include "coordinator/server/api_service.h"
#include "workers/speculation/model_drafter.h"
#include "workers/speculation/ngram_drafter.h"
#include "workers/speculation/speculative_engine.h"
#include "workers/speculation/target_step_runner.h"

namespace tandem {
namespace {

using namespace std::chrono_literals;

ServiceSettings service_settings(const DeploymentConfig& config) {
  ServiceSettings settings;
  settings.served_model_name = config.server.served_model_name;
  if (!config.server.api_key_env.empty()) {
    const char* key = std::getenv(config.server.api_key_env.c_str());
    require(key && *key, ErrorKind::invalid_argument,
            "server.api_key_env names " + config.server.api_key_env +
                ", but that environment variable is unset or empty");
    settings.api_key = key;
  }
  api::RequestLimits& limits = settings.limits;
  limits.default_max_tokens = config.sampling.max_tokens;
  limits.default_temperature = config.sampling.temperature;
  limits.default_top_p = config.sampling.top_p;
  limits.default_top_k = config.sampling.top_k;
  limits.max_tokens_limit = config.limits.max_tokens;
  limits.max_stop_sequences = config.limits.max_stop_sequences;
  limits.served_model_name = config.server.served_model_name;
  settings.request_timeout = std::chrono::milliseconds(
      static_cast<int64_t>(config.server.request_timeout_seconds * 1000));
  settings.max_prompt_tokens = config.limits.max_prompt_tokens;
  settings.gamma.automatic = config.speculation.gamma_auto;
  settings.gamma.gamma = config.speculation.gamma_auto ? config.speculation.max_gamma
                                                       : config.speculation.gamma;
  settings.drafter = drafter_name(config.speculation.drafter);
  settings.drafters = {"ngram", "none"};
  if (config.draft) settings.drafters.insert(settings.drafters.begin(), "model");
  settings.lenience = static_cast<float>(config.speculation.lenience);
  return settings;
}

ModelFacts model_facts(const ModelConfig& target, const Tokenizer& tokenizer) {
  ModelFacts facts;
  facts.context_length = target.max_position_embeddings;
  facts.vocab_size = target.vocab_size;
  facts.stop_ids = target.eos_token_ids;
  if (auto eos = tokenizer.eos_id(); eos && facts.stop_ids.empty()) facts.stop_ids = {*eos};
  return facts;
}

}  // namespace

// Declared in the order they are built; destroyed in reverse, so the HTTP
// threads stop before the scheduler, and the scheduler before the engine.
struct ServerApp::Parts {
  ServerMetrics metrics;
  std::unique_ptr<ApiService> service;
  std::unique_ptr<http::HttpServer> http;
  std::unique_ptr<Backend> backend;        // the target's (cpu when the target is remote)
  std::unique_ptr<Backend> draft_backend;  // only when the draft has a GPU of its own
  LoadedModel target;
  std::optional<LoadedModel> draft;
  std::unique_ptr<Drafter> model_drafter;  // ModelDrafter, or RemoteDrafter on its own rank
  std::unique_ptr<NgramDrafter> ngram_drafter;
  NoDrafter no_drafter;
  std::unique_ptr<TargetExecutor> target_executor;  // here (TargetStepRunner) or RemoteTarget
  std::unique_ptr<SpeculativeEngine> engine;
  std::unique_ptr<EngineLoop> scheduler;
  mutable std::mutex lost_mutex;
  std::string lost;  // why another rank is lost; empty while all answer
};

ServerApp::ServerApp(DeploymentConfig config, std::ostream& log, PeerChannel* cluster)
    : config_(std::move(config)), log_(log), cluster_(cluster), parts_(std::make_unique<Parts>()) {}

ServerApp::~ServerApp() {
  if (parts_->http) parts_->http->stop();
  if (parts_->scheduler) parts_->scheduler->stop();
}

std::string ServerApp::lost() const {
  std::lock_guard lock(parts_->lost_mutex);
  return parts_->lost;
}

int ServerApp::port() const { return parts_->http ? parts_->http->port() : 0; }

void ServerApp::start() {
  Parts& parts = *parts_;
  const DeploymentConfig& config = config_;
  if (config.placement.threads > 0) omp_set_num_threads(config.placement.threads);

  // Listen first, so that /health answers (and /ready says "loading") while
  // large checkpoints load.
  parts.service = std::make_unique<ApiService>(service_settings(config), parts.metrics);
  http::HttpOptions options;
  options.host = config.server.host;
  options.port = config.server.port;
  options.threads = config.server.http_threads;
  options.max_body_bytes = static_cast<size_t>(config.server.max_body_bytes);
  ApiService* service = parts.service.get();
  parts.http = std::make_unique<http::HttpServer>(
      options, [service](http::Exchange& exchange) { return service->handle(exchange); });
  parts.http->start();
  log_line(log_, "listening on http://", config.server.host, ":", parts.http->port(),
           ", loading models");

  load_models();
  if (cluster_) wait_for_workers();
  std::vector<Drafter*> drafters;
  if (parts.model_drafter) drafters.push_back(parts.model_drafter.get());
  drafters.push_back(parts.ngram_drafter.get());
  drafters.push_back(&parts.no_drafter);

  EngineOptions engine_options;
  engine_options.max_running = config.scheduler.max_running_sessions;
  engine_options.step_token_budget = config.scheduler.step_token_budget;
  engine_options.tuning = config.speculation.tuning;
  parts.engine = std::make_unique<SpeculativeEngine>(
      parts.target.config, *parts.target.cache, *parts.target_executor, drafters, engine_options);
  parts.engine->set_pipeline(config.speculation.pipeline);
  parts.engine->calibrate();

  const Tokenizer& tokenizer = *parts.target.tokenizer;
  EngineLoopOptions scheduler_options;
  scheduler_options.max_queued = static_cast<size_t>(config.scheduler.max_queued_requests);
  if (cluster_) {  // only another rank can be lost
    scheduler_options.on_lost = [&parts](const std::string& why) {
      {
        std::lock_guard lock(parts.lost_mutex);
        parts.lost = why;
      }
      kill(getpid(), SIGUSR1);  // run_until_signalled's sigwait() takes it
    };
  }
  parts.scheduler = std::make_unique<EngineLoop>(
      *parts.engine, *parts.target.cache, parts.draft ? parts.draft->cache.get() : nullptr,
      tokenizer, parts.metrics, scheduler_options);
  parts.scheduler->start();
  parts.service->attach(*parts.scheduler, tokenizer, model_facts(parts.target.config, tokenizer));
  const std::filesystem::path& target =
      config.target.load_format == LoadFormat::dummy ? config.target.shape : config.target.path;
  log_line(log_, "ready: ", config.server.served_model_name, " (target ", target.string(),
           config.draft ? ", draft " + config.draft->path.string() : std::string(), ", drafter ",
           drafter_name(config.speculation.drafter), ")");
}

void ServerApp::load_models() {
  Parts& parts = *parts_;
  const DeploymentConfig& config = config_;
  const PlacementConfig& placement = config.placement;
  const bool remote_target = cluster_ && placement.target_is_remote();
  const bool remote_draft = cluster_ && config.draft && placement.draft_is_remote();
  // A remote target leaves the coordinator only KV bookkeeping: no device needed.
  parts.backend = remote_target ? make_cpu_backend()
                                : make_placement_backend(placement, placement.target_device(0));
  ModelSpec target = model_spec(config.target, config.scheduler.kv_blocks,
                                config.scheduler.block_size);
  target.weights = !remote_target;  // the coordinator keeps only the KV bookkeeping
  parts.target = load_model(target, *parts.backend);
  require(parts.target.tokenizer.has_value(), ErrorKind::invalid_argument,
          "models.target.tokenizer: the server needs a tokenizer; give a directory holding "
          "tokenizer.json when the weights are dummy");
  if (config.draft) {
    ModelSpec draft = model_spec(*config.draft, config.scheduler.draft_kv_blocks,
                                 config.scheduler.block_size);
    draft.weights = !remote_draft;
    Backend* draft_backend = parts.backend.get();
    if (!remote_draft && placement.backend == BackendKind::cuda &&
        (remote_target || placement.draft_device != placement.target_device(0))) {
      parts.draft_backend = make_placement_backend(placement, placement.draft_device);
      draft_backend = parts.draft_backend.get();
    }
    parts.draft = load_model(draft, *draft_backend);
    require_same_vocabulary(parts.target.config, parts.draft->config);
    if (remote_draft) {
      parts.model_drafter = std::make_unique<RemoteDrafter>(*cluster_);
      parts.draft.reset();  // its KV lives on the draft rank
    } else {
      auto drafter = std::make_unique<ModelDrafter>(*parts.draft->model, *parts.draft->cache);
      // A draft on a GPU of its own drafts on its own thread while the
      // target verifies; on the target's device the two would take turns.
      drafter->run_apart(parts.draft_backend != nullptr);
      parts.model_drafter = std::move(drafter);
    }
  }
  parts.ngram_drafter =
      std::make_unique<NgramDrafter>(config.speculation.ngram_min, config.speculation.ngram_max);
  if (remote_target) {
    parts.target_executor = std::make_unique<RemoteTarget>(*cluster_, parts.target.config.vocab_size);
    return;
  }
  QRowsSource draft_rank_rows;  // a draft on its own rank sends its q rows here
  QRowsLink* q_link = remote_draft ? cluster_->q_rows_link() : nullptr;
  if (remote_draft) {
    require(q_link != nullptr, ErrorKind::internal, "the coordinator has no q rows link");
    q_link->receive_into(*parts.backend);
    draft_rank_rows = [q_link, &channel = *cluster_] {
      const PlacementConfig& where = channel.layout().placement;
      std::optional<ArrivedQRows> rows = q_link->receive(where.step_timeout_seconds);
      require(rows.has_value() || !q_link->ended(), ErrorKind::internal,
              "the draft rank ended its q rows while a step still needed some");
      if (!rows) channel.throw_lost(where.draft_rank, "send its q rows");
      return std::move(*rows);
    };
  }
  auto runner = std::make_unique<TargetStepRunner>(
      *parts.target.model, *parts.target.cache, TargetStepRunner::CacheMode::shared,
      std::move(draft_rank_rows));
  if (remote_draft) {
    static_cast<RemoteDrafter&>(*parts.model_drafter)
        .take_q_rows([q_link, &runner = *runner] {
          while (std::optional<ArrivedQRows> rows = q_link->receive(0))
            runner.deliver_q_rows(std::move(*rows));
        });
  }
  parts.target_executor = std::move(runner);
}

void ServerApp::wait_for_workers() {
  const ClusterLayout& layout = cluster_->layout();
  for (int rank = 0; rank < layout.world_size; ++rank) {
    if (rank == layout.rank) continue;
    // Loading takes as long as it takes; a rank that fails to load ends the job.
    const wire::WorkerReady ready = wire::decode_worker_ready(
        cluster_->wait_forever(rank, wire::tag_of(wire::MessageType::worker_ready)));
    log_line(log_, layout.describe(rank), " ready in ", ready.load_seconds, " s: read ",
             ready.bytes_read / 1e6, " MB of checkpoint, resident ", ready.resident_bytes / 1e6,
             " MB");
  }
}

void ServerApp::shutdown() {
  Parts& parts = *parts_;
  if (!parts.http) return;
  parts.service->drain();
  if (!parts.scheduler) {  // still loading
    parts.http->stop();
    parts.http.reset();
    stop_workers();
    return;
  }
  parts.http->stop_accepting();
  const auto grace = std::chrono::duration<double>(config_.server.shutdown_grace_seconds);
  const auto deadline = std::chrono::steady_clock::now() + grace;
  while (parts.scheduler->in_flight() > 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(20ms);
  if (parts.scheduler->in_flight() > 0) {
    log_line(log_, "cancelling ", parts.scheduler->in_flight(),
             " requests still running after the grace period");
    parts.scheduler->cancel_all(api::unavailable("the server is shutting down"));
    const auto flush_deadline = std::chrono::steady_clock::now() + 1s;
    while (parts.scheduler->in_flight() > 0 && std::chrono::steady_clock::now() < flush_deadline)
      std::this_thread::sleep_for(10ms);
  }
  // Let the connections write what the last steps published.
  std::this_thread::sleep_for(100ms);
  parts.http->stop();
  parts.scheduler->stop();
  parts.http.reset();
  stop_workers();
  // The draft rank may still be sending rows no step needed; it cannot
  // take its Shutdown (and the job cannot end) until they are taken. A lost
  // rank ends the job without waiting.
  const PlacementConfig& placement = config_.placement;
  const bool takes_draft_rank_rows =
      cluster_ && config_.draft && placement.draft_is_remote() && !placement.target_is_remote();
  if (takes_draft_rank_rows && lost().empty() &&
      !cluster_->q_rows_link()->drop_until_end(placement.step_timeout_seconds))
    log_line(log_, "the draft rank did not end its q rows within the step timeout");
}

void ServerApp::stop_workers() {
  if (!cluster_) return;
  // A drafter here with the target on other ranks: its q rows end first.
  if (QRowsLink* link = cluster_->q_rows_link(); link != nullptr && link->sends()) link->send_end();
  // Small messages go out eagerly: a rank that is lost does not block this.
  wire::Shutdown message;
  message.reason = "the coordinator is shutting down";
  const Bytes bytes = wire::encode(message);
  for (int rank = 0; rank < cluster_->layout().world_size; ++rank)
    if (rank != cluster_->layout().rank) cluster_->send(bytes, rank, kCommandTag);
}

int run_until_signalled(DeploymentConfig config, PeerChannel* cluster) {
  // Block the signals before any thread starts, so every thread inherits the
  // mask and only sigwait() below receives them. SIGUSR1 is the server's
  // own: another rank is lost.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  ServerApp app(std::move(config), std::cerr, cluster);
  app.start();
  int received = 0;
  sigwait(&signals, &received);
  if (received == SIGUSR1) {
    log_line(std::cerr, app.lost(), "; failing requests with 503 and stopping the job");
    app.shutdown();
    return kLostRankExit;
  }
  log_line(std::cerr, received == SIGINT ? "SIGINT" : "SIGTERM", ": shutting down gracefully");
  app.shutdown();
  log_line(std::cerr, "stopped");
  return 0;
}

}  // namespace tandem
