// make_world_communicator (see world_communicator.h).
#include "transport/world_communicator.h"

#include "transport/local_communicator.h"

namespace tandem {

std::unique_ptr<Communicator> make_world_communicator(std::optional<MpiRuntime>& runtime) {
  if (!MpiRuntime::launched_by_mpi()) return std::make_unique<LocalCommunicator>();
  if (!runtime) runtime.emplace();
  return runtime->world();
}

}  // namespace tandem
