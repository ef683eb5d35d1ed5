// Tag: every point-to-point tag a Tandem job uses, in one place, so that no
// two kinds of message share a tag by accident. A receiver takes the next
// message with the tag it asks for, so the tag is what keeps a reply from
// being taken for a command. The values are part of the wire: a rank of
// another build must agree on them (they have not changed since the first
// release that ran as a job).
//
// Communicator takes tags as int (any tag works for tests and tools);
// tag_value() turns a Tag into one.
#pragma once

namespace tandem {

enum class Tag : int {
  // One per typed message, equal to its wire::MessageType (cluster/wire/):
  // the replies and reports travel with their own type's tag.
  draft_step = 1,
  draft_reply = 2,
  q_rows = 3,  // the q rows link's QRows messages
  target_step = 4,
  target_result = 5,
  shutdown = 6,
  worker_ready = 7,
  // Everything the coordinator tells a worker (DraftStep, TargetStep,
  // Shutdown): one tag, so that a worker waits for its next command in one place.
  command = 50,
  // A target shard's acknowledgement of a TargetStep on receipt, so that a
  // silent rank can be named.
  ack = 51,
  // Communicator::send_floats' default: the floats as a byte message.
  floats = 70,
  // tandem-bench tensor-parallel: rank 0 tells the waiting ranks that the
  // next layout may start.
  bench_release = 90,
};

constexpr int tag_value(Tag tag) { return static_cast<int>(tag); }

}  // namespace tandem
