// CPU reference of batched speculative verification: the accept/reject loop
// and the correction draw of Algorithm 1 (Leviathan, Kalman, Matias 2023,
// §2.3), with the lenience of Appendix A.5. The CUDA backend is checked
// against these.
//
// Dimension glossary: V vocabulary size; γ (gamma) draft tokens in one
// session's block; B blocks (sessions) in one call.
//
// For one block the draft proposed x_1..x_γ at absolute positions
// first_position .. first_position+γ-1, sampled from its standardized rows
// q_1..q_γ; the target scored prefix+[x_1..x_{j-1}] into p_1..p_{γ+1}.
//   accept:     for j = 1..γ, keep x_j while r_j < p_j(x_j) / (l q_j(x_j)),
//               r_j = philox_uniform(seed, first_position+j-1, accept);
//               the first j that fails is rejected and ends the loop, so
//               n = the number kept. (r_j is in [0, 1), so l q_j(x_j) <=
//               p_j(x_j) always accepts and p_j(x_j) = 0 never does.)
//   correction: if n < γ: t ~ norm(max(0, p_{n+1} - l q_{n+1})), for l = 1
//               the paper's residual; if n = γ: t ~ p_{γ+1} (the bonus
//               token). Either way by inverse CDF (cpu::sample_row) with
//               u = philox_uniform(seed, first_position+n, target_sample).
// Appendix A.1: with l = 1 the token at every position is distributed
// exactly as p, whatever q is. Appendix A.5: with l < 1 no token is emitted
// with probability above p(x)/l, and acceptance rises to sum_x min(p/l, q).
//
// Bit-exact definitions every backend keeps (the replay contract: a seeded
// request gives the same tokens whatever batch it shares):
//   - the accept test is r_j < double(p) / (double(l) * double(q)), in double;
//   - the residual entry is float(max(0, double(p) - double(l) * double(q))),
//     then sampled as cpu::sample_row samples (token-index order, double sum).
//     l q of two floats is exact in double, so both are one correctly rounded
//     operation after it, whether or not a compiler contracts them into FMA;
//   - if every residual entry is 0 the token is drawn from p_{n+1} instead,
//     with the same u. In exact arithmetic that cannot happen after a
//     rejection: sum max(0, p - l q) = 0 means p <= l q everywhere, which for
//     rows summing to 1 forces l = 1 and p = q, where rejection has
//     probability 0. So it is reached only through float rounding (p and q
//     equal up to an ulp), and sampling p there is the draw p = q asks for.
//
// Deterministic drafters (n-gram prompt lookup, a cache of earlier output)
// have no q rows: q_j is one-hot at x_j, so the test is r_j < p_j(x_j) / l
// and the residual is p_{n+1} with x_{n+1} lowered to max(0, p - l).
//
// The gumbel coupling (block.coupling == Coupling::gumbel; Daliri, Musco,
// Suresh 2024) replaces the accept test and the correction draw with the
// target's own Gumbel-max draws (kernels/philox.h, the Gumbel contract):
//   t_j = cpu::gumbel_row(p_j, seed, first_position + j - 1), j = 1..γ+1;
//   n   = the number of leading j with x_j == t_j; the token is t_{n+1}.
// So a block emits exactly what plain decoding with the same seed emits,
// token for token, whatever the drafter proposed or γ was. A draft that
// drew x_j = argmin E/q_j with the same clocks matches with probability at
// least (1 - TV)/(1 + TV), TV = the total variation between p_j and q_j
// (rejection's 1 - TV is higher; the coupling buys drafter-invariance).
// q is not read (it may be null; q_j(x_j) is not checked), the lenience
// must be 1 (Appendix A.5's lenient test is Algorithm 1's), and beta_j is 1
// if x_j == t_j else 0, for every j (rows past the first difference are
// raced too; one without mass there gives 0). A p row without mass where a
// token must be drawn (rows 1..n+1) is reported as for rejection. Blocks of
// both couplings may share one verify() call.
//
// Thread safety: both functions are pure (no shared state); blocks of one
// verify() call run in parallel (thread_pool.h) when there is enough work.
#pragma once

#include <cstdint>
#include <span>

#include "kernels/verify_types.h"

namespace tandem::cpu {

// One session's speculative block. Rows are standardized (cpu::standardize),
// each summing to 1; that is not re-checked here (it would cost a pass over
// every row).
using tandem::VerifyBlock;  // kernels/verify_types.h

using tandem::VerifyOutcome;  // kernels/verify_types.h

// Verifies every block: out[b] = (n, t) of blocks[b].
//
// beta: empty, or one entry per draft token (sum of γ over blocks), block by
// block, j = 1..γ within a block. Gumbel blocks: the 0/1 match above.
// Rejection blocks: beta_j = the acceptance rate of x_j ~ q_j (Definition
// 3.1), i.e. sum_x min(p_j(x)/l, q_j(x)): Theorem 3.5's sum_x min(p_j, q_j)
// for l = 1, Appendix A.5's formula for l < 1 (with lenience the rate that
// predicts speed-up is the lenient one). For a deterministic drafter it is
// min(1, p_j(x_j)/l). Every j is reported, also past the first rejection:
// those rows were computed anyway and still sample how well the draft tracks
// the target. The coordinator averages them into α.
//
// Throws tandem::Error(invalid_argument) naming the field (e.g.
// "blocks[3].lenience") if V <= 0, out.size() != blocks.size(), beta is
// neither empty nor sum γ long, or a block has γ < 0, a null p (or null
// drafted with γ > 0), a drafted id outside [0, V), q_j(x_j) <= 0 (x_j could
// not have been drawn from q_j: the q rows are not the ones the draft sampled
// from; rejection blocks only), first_position < 0, a lenience outside
// (0, 1] (or other than 1 on a gumbel block), or a coupling that is neither
// rejection nor gumbel. A p row with no positive finite mass where a token
// must be drawn from it is reported the same way, naming the row. Nothing
// is written to out or beta when it throws.
void verify(std::span<const VerifyBlock> blocks, int V, std::span<VerifyOutcome> out,
            std::span<float> beta = {});

// The argument checks verify() makes on blocks[index] before anything is
// written, with the same messages. q_j(x_j) > 0 is checked only when
// q_rows_on_host: a device backend cannot read its rows from here and checks
// that one on the device.
void check_verify_block(const VerifyBlock& block, size_t index, int V, bool q_rows_on_host);

// The temperature-0 fast path (greedy is the one-hot limit of standardized
// sampling, paper §2.2): no probability rows, only the target's argmax at
// each of the γ+1 positions. Keeping x_j while target_argmax[j-1] == x_j and
// then taking t = target_argmax[n] is exactly what verify() does with one-hot
// p and q, so greedy output is token for token the target's own greedy
// output. No randomness is drawn.
using tandem::GreedyBlock;  // kernels/verify_types.h

// out[b] = (n, t) of blocks[b]. Throws tandem::Error(invalid_argument) naming
// the field if out.size() != blocks.size(), γ < 0 or a needed pointer is
// null; nothing is written then.
void verify_greedy(std::span<const GreedyBlock> blocks, std::span<VerifyOutcome> out);

}  // namespace tandem::cpu
