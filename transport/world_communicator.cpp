// make_world_communicator (see world_communicator.h).
#include "transport/world_communicator.h"

#include <cstdlib>

#include "transport/delayed_communicator.h"
#include "transport/local_communicator.h"

namespace tandem {

std::unique_ptr<Communicator> make_world_communicator(std::optional<MpiRuntime>& runtime) {
  if (!MpiRuntime::launched_by_mpi()) {
    // One process has no other host to delay, but a bad value is still an
    // error rather than a setting silently ignored.
    if (const char* delay = std::getenv(kLinkDelayVariable)) parse_link_delay_ms(delay);
    return std::make_unique<LocalCommunicator>();
  }
  if (!runtime) runtime.emplace();
  // Collective: every rank reports its host and TANDEM_TEST_LINK_DELAY_MS
  // (the test-only link delay, delayed_communicator.h; unset everywhere,
  // the world is MPI's own).
  return with_test_link_delay(runtime->world());
}

}  // namespace tandem
