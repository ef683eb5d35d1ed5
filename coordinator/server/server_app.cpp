#include "coordinator/server/server_app.h"

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
#include "coordinator/config/web_access.h"
#include "coordinator/http/http_server.h"
#include "coordinator/metrics/server_metrics.h"
#include "coordinator/engine_loop/engine_loop.h"
#include "coordinator/server/api_service.h"
#include "coordinator/server/watchdog.h"
#include "kernels/cpu/thread_pool.h"
#include "workers/speculation/speculative_engine.h"

namespace tandem {
namespace {

using namespace std::chrono_literals;

std::chrono::milliseconds seconds_to_ms(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

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
  settings.access.allowed_hosts =
      config.server.allowed_hosts.value_or(web::default_allowed_hosts(config.server.host));
  settings.access.cors_origins = config.server.cors_origins;
  settings.limits = api::request_limits_of(config);
  settings.request_timeout = seconds_to_ms(config.server.request_timeout_seconds);
  settings.max_prompt_tokens = config.limits.max_prompt_tokens;
  settings.gamma.automatic = config.speculation.gamma_auto;
  settings.gamma.gamma = config.speculation.gamma_auto ? config.speculation.max_gamma
                                                       : config.speculation.gamma;
  settings.drafter = drafter_name(config.speculation.drafter);
  settings.drafters = {"ngram", "none"};
  if (config.draft) settings.drafters.insert(settings.drafters.begin(), "model");
  settings.lenience = static_cast<float>(config.speculation.lenience);
  settings.coupling = config.sampling.coupling;
  return settings;
}

ModelFacts model_facts(const ModelConfig& target, const PagedKvCache& target_cache,
                       const Tokenizer& tokenizer) {
  ModelFacts facts;
  facts.context_length = target.max_position_embeddings;
  facts.kv_positions = target_cache.num_blocks() * target_cache.block_size();
  facts.vocab_size = target.vocab_size;
  facts.stop_ids = target.eos_token_ids;
  if (auto eos = tokenizer.eos_id(); eos && facts.stop_ids.empty()) facts.stop_ids = {*eos};
  return facts;
}

// The target's chat template, read from where its tokenizer came from.
chat::ChatTemplate target_chat_template(const DeploymentConfig& config) {
  const ModelSource& target = config.target;
  const std::string& name = config.server.served_model_name;
  if (!target.tokenizer.empty()) return chat::ChatTemplate::load(target.tokenizer, name);
  if (target.load_format == LoadFormat::dummy) {
    return chat::ChatTemplate::unavailable(
        "the model " + name + " has dummy weights and no tokenizer directory, so no chat template");
  }
  return chat::ChatTemplate::load(target.path, name);
}

// One line saying whether prefix caching is on and how many released blocks
// each local pool keeps (a draft on its own rank: its share of its own pool).
void log_prefix_caching(std::ostream& log, const PrefixCacheSetting& setting,
                        const PagedKvCache& target, const PagedKvCache* draft) {
  if (!setting.enabled) {
    log_line(log, "prefix caching off (scheduler.prefix_caching: false)");
    return;
  }
  const auto kept = [&setting](const PagedKvCache& cache, const char* whose) {
    return std::to_string(evictable_limit(setting, cache.num_blocks())) + " of the " + whose +
           "'s " + std::to_string(cache.num_blocks()) + " blocks";
  };
  log_line(log, "prefix caching ", describe(setting), ": at most ", kept(target, "target"),
           draft ? ", " + kept(*draft, "draft") : std::string());
}

}  // namespace

// Declared in the order they are built; destroyed in reverse, so the HTTP
// threads stop before the engine loop, the engine loop before the engine, and
// the engine before the parts it runs on (the base, destroyed last).
struct ServerApp::Parts : EngineParts {
  explicit Parts(std::string served_model_name) : metrics(std::move(served_model_name)) {}
  ServerMetrics metrics;
  std::unique_ptr<ApiService> service;
  std::unique_ptr<http::HttpServer> http;
  std::unique_ptr<SpeculativeEngine> engine;
  std::unique_ptr<EngineLoop> engine_loop;
  mutable std::mutex lost_mutex;
  std::string lost;  // why another rank is lost; empty while all answer
  pthread_t started_by{};  // the thread that called start(): it takes SIGUSR1
  std::mutex http_mutex;  // held while shutdown() ends http, and by the watchdog's use of it
  std::unique_ptr<Watchdog> watchdog;  // while another rank can be lost: see watch_for_stuck_waits
};

ServerApp::ServerApp(DeploymentConfig config, std::ostream& log, std::unique_ptr<EngineHost> host)
    : config_(std::move(config)),
      log_(log),
      host_(std::move(host)),
      parts_(std::make_unique<Parts>(config_.server.served_model_name)) {}

ServerApp::~ServerApp() {
  parts_->watchdog.reset();
  if (parts_->http) parts_->http->stop();
  if (parts_->engine_loop) parts_->engine_loop->stop();
}

std::string ServerApp::lost() const {
  std::lock_guard lock(parts_->lost_mutex);
  return parts_->lost;
}

void ServerApp::watch_for_stuck_waits() {
  // A wait for another rank times out by itself after the step timeout,
  // unless MPI holds the waiting thread: Open MPI, noticing a lost peer
  // while mpirun is already ending the job, can keep the thread that
  // noticed until mpirun kills the process, and the requests in flight
  // would end with a closed connection instead of a 503. The grace lets
  // every wait that can end do so first (a wait that times out ends within
  // a millisecond of its deadline); mpirun's SIGKILL comes
  // odls_base_sigkill_timeout after its SIGTERM (docs/cluster.md).
  constexpr double kGraceSeconds = 0.5;
  parts_->watchdog = std::make_unique<Watchdog>(
      100ms, [this] { return host_->overdue_wait(kGraceSeconds); },
      [this](const std::string& why) { end_with_stuck_wait(why); });
}

void ServerApp::end_with_stuck_wait(const std::string& why) {
  Parts& parts = *parts_;
  note_lost(why);
  log_line(log_, why, "; the thread waiting for it is held inside MPI: failing requests with 503",
           " and ending the job");
  {
    std::lock_guard lock(parts.http_mutex);
    if (parts.http) {  // null once shutdown() has answered every request
      parts.service->drain();
      parts.engine_loop->abandon_all(api::unavailable(why));
      std::this_thread::sleep_for(100ms);  // the connections write the 503s
      parts.http->close_connections(1s);
    }
  }
  // No unwinding: the threads held inside MPI would never be joined, and
  // mpirun ends the rest of the job when this process exits non-zero.
  log_.flush();
  std::cerr.flush();
  std::_Exit(kLostRankExit);
}

void ServerApp::note_lost(const std::string& why) {
  if (why.empty()) return;
  std::lock_guard lock(parts_->lost_mutex);
  if (parts_->lost.empty()) parts_->lost = why;  // the first loss is the cause
}

int ServerApp::port() const { return parts_->http ? parts_->http->port() : 0; }

void ServerApp::start() {
  Parts& parts = *parts_;
  parts.started_by = pthread_self();
  const DeploymentConfig& config = config_;
  cpu::configure_threads(config.placement.cpu_threads, config.placement.cpu_pinning);
  log_line(log_, "CPU kernels: ", cpu::describe_threads(),
           " (placement.cpu_threads, placement.cpu_pinning)");

  // Listen first, so that /health answers (and /ready says "loading") while
  // large checkpoints load.
  parts.service = std::make_unique<ApiService>(service_settings(config), parts.metrics);
  http::HttpOptions options;
  options.host = config.server.host;
  options.port = config.server.port;
  options.threads = config.server.http_threads;
  options.max_body_bytes = static_cast<size_t>(config.server.max_body_bytes);
  options.max_connections = config.server.max_connections;
  options.idle_timeout = seconds_to_ms(config.server.idle_timeout_seconds);
  options.request_read_timeout = seconds_to_ms(config.server.request_read_timeout_seconds);
  options.log = &log_;
  options.log_format =
      config.server.log_format == "json" ? http::LogFormat::json : http::LogFormat::text;
  options.on_connections_changed = [&metrics = parts.metrics](int change) {
    metrics.open_connections.inc(change);
  };
  options.on_refused_connection = [&metrics = parts.metrics] { metrics.refused_connections.inc(); };
  ApiService* service = parts.service.get();
  parts.http = std::make_unique<http::HttpServer>(
      options, [service](http::Exchange& exchange) { return service->handle(exchange); });
  parts.http->start();
  log_line(log_, "listening on http://", config.server.host, ":", parts.http->port(),
           ", loading models");
  if (const auto note = web::wildcard_note(config.server.host, config.server.allowed_hosts))
    log_line(log_, *note);

  host_->load(parts, log_);
  // What placement.weight_dtype became, and why: auto depends on the checkpoints.
  if (!parts.weights.why.empty()) log_line(log_, "weights: ", describe(parts.weights));
  if (!parts.draft_weights.why.empty())
    log_line(log_, "draft weights: ", describe(parts.draft_weights));
  log_prefix_caching(log_, config.scheduler.prefix_cache, *parts.target.cache,
                     parts.draft ? parts.draft->cache.get() : nullptr);
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
  EngineLoopOptions loop_options;
  loop_options.max_queued = static_cast<size_t>(config.scheduler.max_queued_requests);
  loop_options.log = &log_;
  loop_options.drafters.assign(drafters.begin(), drafters.end());
  if (host_->can_lose_ranks()) {
    loop_options.on_lost = [this, &parts](const std::string& why) {
      note_lost(why);
      // To run_until_signalled's thread, which sigwait()s for it. Not to the
      // process: once that thread has left sigwait() (a SIGTERM's shutdown,
      // under way when a rank is lost), the kernel would hand the signal to
      // a thread that does not block it (MPI's own) and it would kill the
      // process; sent to the thread, it waits there, blocked.
      pthread_kill(parts.started_by, SIGUSR1);
    };
  }
  parts.engine_loop = std::make_unique<EngineLoop>(
      *parts.engine, *parts.target.cache, parts.draft ? parts.draft->cache.get() : nullptr,
      tokenizer, parts.metrics, loop_options);
  parts.engine_loop->start();
  if (host_->can_lose_ranks()) watch_for_stuck_waits();
  parts.service->attach(*parts.engine_loop, tokenizer, model_facts(parts.target.config, *parts.target.cache, tokenizer),
                        target_chat_template(config));
  const std::filesystem::path& target =
      config.target.load_format == LoadFormat::dummy ? config.target.shape : config.target.path;
  log_line(log_, "ready: ", config.server.served_model_name, " (target ", target.string(),
           config.draft ? ", draft " + config.draft->path.string() : std::string(), ", drafter ",
           drafter_name(config.speculation.drafter), ")");
}

void ServerApp::shutdown() {
  Parts& parts = *parts_;
  if (!parts.http) return;
  parts.service->drain();
  if (!parts.engine_loop) {  // still loading
    parts.http->close_connections(1s);
    parts.http.reset();
    note_lost(host_->stop());
    return;
  }
  parts.http->stop_accepting();
  const auto grace = std::chrono::duration<double>(config_.server.shutdown_grace_seconds);
  const auto deadline = std::chrono::steady_clock::now() + grace;
  while (parts.engine_loop->in_flight() > 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(20ms);
  if (parts.engine_loop->in_flight() > 0) {
    log_line(log_, "cancelling ", parts.engine_loop->in_flight(),
             " requests still running after the grace period");
    parts.engine_loop->cancel_all(api::unavailable("the server is shutting down"));
    const auto flush_deadline = std::chrono::steady_clock::now() + 1s;
    while (parts.engine_loop->in_flight() > 0 && std::chrono::steady_clock::now() < flush_deadline)
      std::this_thread::sleep_for(10ms);
  }
  // Let the connections write what the last steps published and answer
  // (503, Connection: close) what their clients have sent, then close them.
  std::this_thread::sleep_for(100ms);
  parts.http->close_connections(1s);
  parts.engine_loop->stop();
  {
    std::lock_guard lock(parts.http_mutex);
    parts.http.reset();
  }
  note_lost(host_->stop());
  // A lost rank ends the job without waiting for what the others still send.
  if (lost().empty()) host_->drain(log_);
}

int run_until_signalled(DeploymentConfig config, std::unique_ptr<EngineHost> host) {
  // Block the signals before any thread starts, so every thread inherits the
  // mask and only sigwait() below receives them. SIGUSR1 is the server's
  // own: another rank is lost.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  ServerApp app(std::move(config), std::cerr, std::move(host));
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
  // A rank lost while the requests in flight finished (mpirun's SIGTERM
  // comes when a host's daemon dies; the step in flight then fails at the
  // step timeout): the job cannot end cleanly, the caller aborts it.
  if (!app.lost().empty()) {
    log_line(std::cerr, app.lost(), "; stopping the job");
    return kLostRankExit;
  }
  log_line(std::cerr, "stopped");
  return 0;
}

}  // namespace tandem
