// main() of the MPI test binaries (tests/transport, tests/workers): every
// rank runs every case, in the same order (collectives need all ranks in one
// case at once).
//
// Rank 0 prints gtest's usual report; the other ranks print only their
// failures, prefixed by rank, so that 4 copies of the report do not bury
// the one line that matters. A rank with a failure exits non-zero, which
// makes mpiexec exit non-zero.
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <utility>

#include "tests/support/mpi/mpi_world.h"
#include "transport/mpi_runtime.h"

namespace tandem::test_support {

namespace {
std::unique_ptr<Communicator> world;
}  // namespace

void set_mpi_world(std::unique_ptr<Communicator> communicator) { world = std::move(communicator); }
Communicator& mpi_world() { return *world; }

}  // namespace tandem::test_support

namespace {

class FailurePrinter : public testing::EmptyTestEventListener {
 public:
  explicit FailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::fprintf(stderr, "[rank %d] %s:%d: failure\n%s\n", rank_,
                 result.file_name() ? result.file_name() : "?", result.line_number(),
                 result.message());
  }

 private:
  int rank_;
};

}  // namespace

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  int result = 1;
  {
    tandem::MpiRuntime runtime;
    tandem::test_support::set_mpi_world(runtime.world());
    const int rank = tandem::test_support::mpi_world().rank();
    if (rank != 0) {
      testing::TestEventListeners& listeners = testing::UnitTest::GetInstance()->listeners();
      delete listeners.Release(listeners.default_result_printer());
      listeners.Append(new FailurePrinter(rank));
    }
    result = RUN_ALL_TESTS();
    tandem::test_support::set_mpi_world(nullptr);  // before MPI_Finalize
  }
  return result;
}
