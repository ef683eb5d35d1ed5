#include "cluster/ranks/draft_rank.h"

#include <map>
#include <vector>

#include "cluster/wire/messages.h"
#include "common/error.h"
#include "workers/speculation/model_drafter.h"

namespace tandem {
namespace {

using wire::MessageType;

// The committed tokens of every session the draft rank drafts for.
using SessionTokens = std::map<SessionKey, std::vector<int32_t>>;

void catch_up(SessionTokens& sessions, const wire::DraftStep::Entry& entry,
              ModelDrafter& drafter) {
  std::vector<int32_t>& tokens = sessions[entry.session];
  require(entry.known >= 0 && static_cast<size_t>(entry.known) <= tokens.size(),
          ErrorKind::internal, [&] {
            return "DraftStep: session " + std::to_string(entry.session) + " claims " +
                   std::to_string(entry.known) + " tokens known, the draft rank holds " +
                   std::to_string(tokens.size());
          });
  tokens.resize(static_cast<size_t>(entry.known));
  tokens.insert(tokens.end(), entry.new_tokens.begin(), entry.new_tokens.end());
  // Drop what was drafted past the committed text last time.
  drafter.commit(entry.session, static_cast<int>(tokens.size()));
}

}  // namespace

int serve_draft_rank(PeerChannel& channel, LlamaModel& draft, PagedKvCache& cache) {
  const ClusterLayout& layout = channel.layout();
  const int coordinator = layout.placement.coordinator_rank;
  QRowsLink* q_link = channel.q_rows_link();
  require(q_link != nullptr, ErrorKind::internal, "the draft rank has no q rows link");
  ModelDrafter drafter(draft, cache);
  SessionTokens sessions;
  for (;;) {
    const Bytes bytes = channel.wait_forever(coordinator, Tag::command);
    if (wire::peek_type(bytes) == MessageType::shutdown) {
      q_link->send_end();  // no more rows (see wire::QRows)
      return wire::decode_shutdown(bytes).exit_code;
    }
    const wire::DraftStep step = wire::decode_draft_step(bytes);
    for (uint64_t session : step.released) {
      drafter.release(session);
      sessions.erase(session);
    }
    std::vector<DraftRequest> requests;
    for (const wire::DraftStep::Entry& entry : step.entries) catch_up(sessions, entry, drafter);
    for (const wire::DraftStep::Entry& entry : step.entries)
      requests.push_back({entry.session, sessions.at(entry.session), entry.gamma, entry.sampling,
                          entry.processing.empty() ? nullptr : &entry.processing.front(),
                          entry.cache_salt});
    std::vector<DraftProposal> proposals;
    drafter.propose(requests, proposals);

    wire::DraftReply reply;
    reply.step = step.step;
    reply.seconds = drafter.last_seconds();
    // Cumulative, so that a reply the coordinator never reads loses nothing.
    reply.prefix_queries = cache.prefix_counters().queries;
    reply.prefix_hits = cache.prefix_counters().hits;
    wire::QRows q_rows;
    q_rows.step = step.step;
    q_rows.vocab = draft.config().vocab_size;
    std::vector<DeviceRows> rows;  // on the draft's device, side by side
    for (size_t i = 0; i < proposals.size(); ++i) {
      reply.tokens.push_back(proposals[i].tokens);
      reply.faults.push_back(proposals[i].fault);  // the session's own: it ends alone
      if (proposals[i].q.empty()) continue;
      q_rows.entries.push_back({requests[i].session,
                                static_cast<int32_t>(proposals[i].tokens.size())});
      rows.push_back(std::move(proposals[i].q));
    }
    // Tokens first: the coordinator needs them to build the TargetStep that
    // target rank 0 must receive before it takes the rows.
    channel.send(wire::encode(reply), coordinator, Tag::draft_reply);
    if (!q_rows.entries.empty()) q_link->send(q_rows, rows);
  }
}

}  // namespace tandem
