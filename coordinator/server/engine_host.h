// EngineHost: where the engine's models live, as the server sees them. The
// server asks it once, after it started listening, for the parts the engine
// runs on, and tells it when the engine has stopped. It never learns whether
// a part is local or a proxy for other ranks of an MPI job: the composition
// root (coordinator/deployment/) decides that and implements this.
#pragma once

#include <memory>
#include <optional>
#include <ostream>
#include <string>

#include "coordinator/models/load_model.h"
#include "kernels/backend.h"
#include "workers/speculation/drafter.h"
#include "workers/speculation/ngram_drafter.h"
#include "workers/speculation/target_executor.h"

namespace tandem {

// What the engine runs on. Declared in the order they are built, so that
// they are destroyed in reverse: executors and drafters before the models
// they use, models before their backends.
struct EngineParts {
  std::unique_ptr<Backend> backend;        // the target's (cpu when the target is remote)
  std::unique_ptr<Backend> draft_backend;  // only when the draft has a GPU of its own
  // The weight dtype of each, and why (placement.weight_dtype), for the log;
  // empty `why`: no such backend, or one for KV bookkeeping only.
  WeightDtypeChoice weights, draft_weights;
  // The target's config, tokenizer and KV cache (block accounting only when
  // the target runs on other ranks, which hold its weights).
  LoadedModel target;
  std::optional<LoadedModel> draft;        // a draft model in this process
  std::unique_ptr<Drafter> model_drafter;  // the "model" drafter, when a draft is configured
  std::unique_ptr<NgramDrafter> ngram_drafter;
  NoDrafter no_drafter;
  std::unique_ptr<TargetExecutor> target_executor;
};

class EngineHost {
 public:
  virtual ~EngineHost() = default;

  // Loads the models (and, in a job, waits until the other ranks loaded
  // theirs) into parts. Called once, from ServerApp::start().
  virtual void load(EngineParts& parts, std::ostream& log) = 0;
  // Whether a part can be lost (another rank): the engine's steps then fail
  // with Error(unavailable), and the server answers 503 and stops.
  virtual bool can_lose_ranks() const { return false; }
  // Any thread: why the thread talking to the other ranks is stuck (a wait
  // for one still under way grace_seconds after its step timeout), or
  // empty. See PeerChannel::overdue().
  virtual std::string overdue_wait(double grace_seconds) const {
    (void)grace_seconds;
    return {};
  }
  // The engine no longer runs (or never started): tell what runs elsewhere
  // to stop. Returns why a part could not be told (it is lost), or empty.
  virtual std::string stop() { return {}; }
  // After stop(), when nothing was lost and the engine ran: take what the
  // other ranks still send, so that they can finish.
  virtual void drain(std::ostream& log) {}
};

}  // namespace tandem
