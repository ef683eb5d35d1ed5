#include "coordinator/deployment/engine_assembly.h"

#include <optional>

#include "cluster/proxies/remote_drafter.h"
#include "cluster/proxies/remote_target.h"
#include "common/error.h"
#include "coordinator/deployment/prefix_cache_apply.h"
#include "coordinator/models/load_model.h"
#include "workers/speculation/model_drafter.h"
#include "workers/speculation/target_step_runner.h"

namespace tandem {
namespace {

// The target runs here; a draft on a rank of its own sends its q rows here
// over the q rows link, and while the drafter waits for its reply it hands
// the rows that came to the runner.
std::unique_ptr<TargetExecutor> local_target(EngineParts& parts, PeerChannel* cluster,
                                             bool remote_draft) {
  QRowsSource draft_rank_rows;
  QRowsLink* q_link = remote_draft ? cluster->q_rows_link() : nullptr;
  if (remote_draft) {
    require(q_link != nullptr, ErrorKind::internal, "the coordinator has no q rows link");
    q_link->receive_into(*parts.backend);
    draft_rank_rows = [q_link, &channel = *cluster] {
      const RankPlacement& where = channel.layout().placement;
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
  return runner;
}

}  // namespace

void assemble_engine(const DeploymentConfig& config, PeerChannel* cluster, EngineParts& parts) {
  const PlacementConfig& placement = config.placement;
  const bool remote_target = cluster && placement.target_is_remote();
  const bool remote_draft = cluster && config.draft && placement.draft_is_remote();
  // A draft in this process runs on the target's backend unless it has a GPU
  // of its own.
  const bool local_draft = config.draft && !remote_draft;
  const bool draft_apart = local_draft && placement.backend == BackendKind::cuda &&
                           (remote_target || placement.draft_device != placement.target_device(0));
  const bool draft_shares = local_draft && !draft_apart;
  // A remote target leaves the coordinator only KV bookkeeping: no device
  // needed, unless the draft runs on it.
  parts.backend = remote_target && !draft_shares
                      ? make_cpu_backend()
                      : make_placement_backend(
                            placement, placement.target_device(0),
                            checkpoint_dirs({remote_target ? nullptr : &config.target,
                                             draft_shares ? &*config.draft : nullptr}),
                            &parts.weights);
  ModelSpec target = model_spec(config.target, config.scheduler.kv_blocks,
                                config.scheduler.block_size);
  target.weights = !remote_target;  // the coordinator keeps only the KV bookkeeping
  parts.target = load_model(target, *parts.backend);
  // The coordinator's target cache allocates the blocks (a remote target's
  // shards follow its numbers), so it is the one that caches prefixes.
  apply(config.scheduler.prefix_cache, *parts.target.cache);
  require(parts.target.tokenizer.has_value(), ErrorKind::invalid_argument,
          "models.target.tokenizer: the server needs a tokenizer; give a directory holding "
          "tokenizer.json when the weights are dummy");
  if (config.draft) {
    ModelSpec draft = model_spec(*config.draft, config.scheduler.draft_kv_blocks,
                                 config.scheduler.block_size);
    draft.weights = !remote_draft;
    Backend* draft_backend = parts.backend.get();
    if (draft_apart) {
      parts.draft_backend = make_placement_backend(
          placement, placement.draft_device, checkpoint_dirs({&*config.draft}), &parts.draft_weights);
      draft_backend = parts.draft_backend.get();
    }
    parts.draft = load_model(draft, *draft_backend);
    require_same_vocabulary(parts.target.config, parts.draft->config);
    // A draft on a rank of its own caches in its own process (its rank's loader).
    if (!remote_draft) apply(config.scheduler.prefix_cache, *parts.draft->cache);
    if (remote_draft) {
      parts.model_drafter = std::make_unique<RemoteDrafter>(*cluster);
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
  if (remote_target)
    parts.target_executor =
        std::make_unique<RemoteTarget>(*cluster, parts.target.config.vocab_size);
  else
    parts.target_executor = local_target(parts, cluster, remote_draft);
}

}  // namespace tandem
