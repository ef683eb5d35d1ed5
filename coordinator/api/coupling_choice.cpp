#include "coordinator/api/coupling_choice.h"

#include "common/error.h"

namespace tandem::api {

CouplingSetting read_coupling(const Json& value) {
  const std::string& name = read_string(value, "speculation.coupling");
  for (const CouplingSetting setting :
       {CouplingSetting::rejection, CouplingSetting::gumbel, CouplingSetting::automatic}) {
    if (name == coupling_setting_name(setting)) return setting;
  }
  throw invalid_value("speculation.coupling",
                      "Expected one of \"rejection\", \"gumbel\", \"auto\", but got " + value.dump() + ".");
}

Coupling resolve_coupling(const CouplingInputs& inputs) {
  const bool lenient = inputs.lenience < 1.0f;
  if (inputs.requested == CouplingSetting::gumbel && lenient) {
    throw invalid_value("speculation.coupling",
                        "\"gumbel\" cannot run on this deployment: its speculation.lenience is below 1, "
                        "which loosens rejection sampling's test. Use \"rejection\" or \"auto\".");
  }
  const CouplingSetting setting =
      inputs.requested != CouplingSetting::automatic ? inputs.requested : inputs.deployed;
  switch (setting) {
    case CouplingSetting::rejection: return Coupling::rejection;
    case CouplingSetting::gumbel:
      require(!lenient, ErrorKind::invalid_argument,
              "sampling.coupling: gumbel cannot run with speculation.lenience below 1");
      return Coupling::gumbel;
    case CouplingSetting::automatic: break;
  }
  return inputs.seeded && !lenient ? Coupling::gumbel : Coupling::rejection;
}

}  // namespace tandem::api
