// The host side of the CUDA sampling ops (see sampling_host.h).
#include "kernels/cuda/sampling_host.h"

#include <string>

#include "common/error.h"
#include "kernels/cpu/verify.h"

namespace tandem::cuda {

void check_sample_gumbel(int rows, int V, std::span<const NoiseKey> keys) {
  require(V > 0, ErrorKind::invalid_argument,
          "V (vocabulary size) must be > 0, got " + std::to_string(V));
  require(rows >= 0 && keys.size() == static_cast<size_t>(rows), ErrorKind::invalid_argument,
          [&] {
            return "sample_gumbel: " + std::to_string(keys.size()) + " noise keys for " +
                   std::to_string(rows) + " rows";
          });
}

void raise_gumbel_failures(std::span<const int32_t> tokens) {
  for (size_t r = 0; r < tokens.size(); ++r) {
    require(tokens[r] >= 0, ErrorKind::invalid_argument, [&] {
      return "sample_gumbel: probability row " + std::to_string(r) +
             " has no positive finite mass";
    });
  }
}

size_t check_verify(std::span<const VerifyBlock> blocks, int V, size_t out_size,
                    size_t beta_size) {
  require(V > 0, ErrorKind::invalid_argument, "verify: V must be > 0");
  require(out_size == blocks.size(), ErrorKind::invalid_argument,
          "verify: out must have one entry per block");
  size_t drafts = 0;
  for (size_t b = 0; b < blocks.size(); ++b) {
    cpu::check_verify_block(blocks[b], b, V, /*q_rows_on_host=*/false);
    drafts += static_cast<size_t>(blocks[b].gamma);
  }
  require(beta_size == 0 || beta_size == drafts, ErrorKind::invalid_argument, [&] {
    return "verify: beta must be empty or have " + std::to_string(drafts) +
           " entries (sum of gamma), got " + std::to_string(beta_size);
  });
  return drafts;
}

std::vector<DeviceVerifyBlock> device_verify_blocks(std::span<const VerifyBlock> blocks,
                                                    const int32_t* drafted) {
  std::vector<DeviceVerifyBlock> device(blocks.size());
  int at = 0;
  for (size_t b = 0; b < blocks.size(); ++b) {
    const VerifyBlock& block = blocks[b];
    device[b] = {block.gamma,          drafted + at, block.p,        block.q,
                 block.first_position, block.seed,   block.lenience, at,
                 block.coupling};
    at += block.gamma;
  }
  return device;
}

void raise_verify_failures(std::span<const VerifyOutcome> outcomes) {
  for (size_t b = 0; b < outcomes.size(); ++b) {
    const std::string block = "blocks[" + std::to_string(b) + "]";
    if (outcomes[b].accepted == kVerifyBadDraftProbability) {
      throw Error(ErrorKind::invalid_argument,
                  block + ".q gives a drafted token probability <= 0; "
                          "pass the rows the draft sampled its tokens from");
    }
    if (outcomes[b].accepted == kVerifyNoMass) {  // cpu::verify's message, row and all
      throw Error(ErrorKind::invalid_argument,
                  block + ".p row " + std::to_string(outcomes[b].token) +
                      " has no positive finite mass; pass standardized rows (cpu::standardize)");
    }
  }
}

}  // namespace tandem::cuda
