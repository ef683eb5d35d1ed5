// The smallest deployment file that parses: a target model and nothing else.
// The configuration tests append the section they test to it.
#pragma once

#include <string>

namespace tandem::test_support {

inline const std::string kTargetOnlyYaml = "models:\n  target:\n    path: m\n";

}  // namespace tandem::test_support
