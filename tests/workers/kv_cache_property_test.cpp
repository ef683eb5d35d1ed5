// Property test of the prefix-caching block manager: seeded random runs of
// admit (n > 1 sessions on one prompt, with and without salts, chat turns
// that continue an earlier conversation), extend (reserve, write, publish
// the committed tokens), truncate (rejected drafts, into shared blocks
// too), preempt (release, admit the same tokens again), cancel and finish,
// on small pools under eviction pressure, each checked after every step
// against the reference model (kv_cache_reference.h): refcounts, no leak,
// no shared block written, eviction of unreferenced blocks only and in LRU
// order, every hit holding exactly the tokens looked up, every reachable
// content found, and the counters.
#include <gtest/gtest.h>

#include <deque>
#include <ostream>
#include <random>
#include <string>

#include "tests/workers/kv_cache_reference.h"
#include "workers/kv_cache.h"

namespace tandem {
namespace {

using testing::KvCacheReference;

struct PropertyCase {
  uint64_t seed;
  int num_blocks;
  int block_size;
  int max_evictable;
};

class PrefixCacheRun {
 public:
  explicit PrefixCacheRun(const PropertyCase& c)
      : backend_(make_cpu_backend()),
        cache_(config(), c.num_blocks, c.block_size, *backend_, {}, PagedKvCache::Storage::none),
        ref_(c.num_blocks, c.block_size, c.max_evictable),
        rng_(c.seed),
        bs_(c.block_size),
        max_len_(c.block_size * 9) {
    cache_.enable_prefix_caching(c.max_evictable);
    // Shared system prompts of different lengths, two of them equal over their first blocks.
    for (int f = 0; f < 3; ++f) families_.push_back(random_tokens(bs_ + f * bs_ + f));
    families_.push_back(families_[2]);
    families_[3].resize(static_cast<size_t>(bs_ * 2));
    const auto extra = random_tokens(3);
    families_[3].insert(families_[3].end(), extra.begin(), extra.end());
  }

  void run(int ops) {
    for (step_ = 0; step_ < ops && !::testing::Test::HasFailure(); ++step_) {
      one_step();
      check();
    }
  }
  // Whether the run reached every case it checks (hits, evictions, stand-ins,
  // unpublishing, truncations stopped by a shared block), and what it went through.
  bool reached_every_case() const {
    const auto& c = ref_.coverage();
    return counters_.hits > 0 && c.evicted > 0 && c.unpublished > 0 && c.stood_in > 0 &&
           c.stale > 0 && shared_stops_ > 0;
  }
  std::string coverage() const {
    const auto& c = ref_.coverage();
    return "hits " + std::to_string(counters_.hits) + "/" + std::to_string(counters_.queries) +
           " tokens, evicted " + std::to_string(c.evicted) + ", unpublished " +
           std::to_string(c.unpublished) + ", stood in " + std::to_string(c.stood_in) + ", stale " +
           std::to_string(c.stale) + ", truncations stopped at a shared block " +
           std::to_string(shared_stops_) + ", failed reserves " + std::to_string(failed_reserves_);
  }

 private:
  static ModelConfig config() {
    ModelConfig c;
    c.num_layers = 1;
    c.num_kv_heads = 1;
    c.head_dim = 2;
    return c;
  }
  int uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool coin(double p) { return std::bernoulli_distribution(p)(rng_); }
  // A small vocabulary, so that independent continuations often agree.
  std::vector<int32_t> random_tokens(int n) {
    std::vector<int32_t> out;
    for (int i = 0; i < n; ++i) out.push_back(uniform(0, 3));
    return out;
  }
  SequenceId random_live() {
    auto it = ref_.sequences().begin();
    std::advance(it, uniform(0, static_cast<int>(ref_.sequences().size()) - 1));
    return it->first;
  }
  // The step, and the last operations before it (to replay a failure by hand).
  std::string where() const {
    std::string out = "step " + std::to_string(step_) + ", after:";
    for (const std::string& line : log_) out += "\n  " + line;
    return out;
  }
  void note(const std::string& what, SequenceId id, const std::vector<int32_t>& tokens = {}) {
    std::string line = what + " seq " + std::to_string(id) + " [";
    for (int32_t t : tokens) line += std::to_string(t);
    line += "] table";
    if (cache_.contains(id))
      for (int32_t b : cache_.block_table(id)) line += " " + std::to_string(b);
    log_.push_back(line);
    if (log_.size() > 16) log_.pop_front();
  }

  void one_step() {
    const size_t live = ref_.sequences().size();
    const int op = live == 0 ? 0 : uniform(0, 99);
    if (op < 14 && live < 6) return admit();
    if (op < 14) return finish(random_live());
    const SequenceId id = random_live();
    if (op < 62) return extend(id);
    if (op < 80) return truncate(id);
    if (op < 87) return preempt(id);
    if (op < 92) return release(id, /*publish=*/false);  // cancelled
    finish(id);
  }

  void admit() {
    uint64_t salt = std::vector<uint64_t>{0, 0, 0, 17, 99}[static_cast<size_t>(uniform(0, 4))];
    std::vector<int32_t> prompt;
    if (!history_.empty() && coin(0.4)) {  // the next turn of an earlier conversation
      const auto& turn =
          history_[static_cast<size_t>(uniform(0, static_cast<int>(history_.size()) - 1))];
      prompt = turn.second;
      if (coin(0.8)) salt = turn.first;
    } else {
      prompt = families_[static_cast<size_t>(uniform(0, static_cast<int>(families_.size()) - 1))];
    }
    const auto more = random_tokens(uniform(0, 3));
    prompt.insert(prompt.end(), more.begin(), more.end());
    if (static_cast<int>(prompt.size()) > max_len_ - 2)
      prompt.resize(static_cast<size_t>(max_len_ - 2));
    const int n = coin(0.2) ? uniform(2, 3) : 1;  // n > 1: the sessions share the prompt
    for (int i = 0; i < n && ref_.sequences().size() < 7; ++i) {
      std::vector<int32_t> script = prompt;
      const auto answer = random_tokens(uniform(1, max_len_ - static_cast<int>(prompt.size())));
      script.insert(script.end(), answer.begin(), answer.end());
      start(script, prompt, salt);
    }
  }

  // A new sequence for `script` looking up `known` (its prompt, or after a
  // preemption everything it had committed).
  void start(const std::vector<int32_t>& script, const std::vector<int32_t>& known, uint64_t salt) {
    const int size = static_cast<int>(known.size());
    const int max_tokens =
        std::vector<int>{size, size - 1, uniform(0, size)}[static_cast<size_t>(uniform(0, 2))];
    const std::vector<int32_t> expected = ref_.expected_match(known, salt, max_tokens);
    int evictable = 0;
    for (int32_t b : expected) evictable += ref_.block(b).owners.empty() ? 1 : 0;
    const PagedKvCache::PrefixMatch match = cache_.match_prefix(known, salt, max_tokens);
    EXPECT_EQ(match.blocks, static_cast<int>(expected.size())) << where();
    EXPECT_EQ(match.tokens, static_cast<int>(expected.size()) * bs_) << where();
    EXPECT_EQ(match.evictable, evictable) << where();

    const SequenceId id = cache_.create_sequence();
    ref_.create(id, salt);
    const int attached = cache_.attach_prefix(id, known, salt, max_tokens);
    counters_.queries += known.size();
    counters_.hits += static_cast<uint64_t>(attached);
    ASSERT_EQ(attached, static_cast<int>(expected.size()) * bs_)
        << where() << ": missed or false hit";
    const auto table = cache_.block_table(id);
    ASSERT_EQ(std::vector<int32_t>(table.begin(), table.end()), expected) << where();
    for (size_t i = 0; i < expected.size(); ++i)  // no false hit: the K/V really are these tokens'
      ASSERT_TRUE(ref_.holds(expected[i], known, i, salt)) << where() << ": block " << expected[i];
    ref_.attach(id, expected, std::vector<int32_t>(known.begin(), known.begin() + attached));
    note("attach " + std::to_string(attached) + " salt " + std::to_string(salt), id, known);
    scripts_[id] = script;
  }

  std::vector<int32_t> committed(SequenceId id) {
    const auto& tokens = ref_.seq(id).tokens;
    const auto& script = scripts_.at(id);
    size_t n = 0;
    while (n < tokens.size() && tokens[n] == script[n]) ++n;
    return std::vector<int32_t>(tokens.begin(), tokens.begin() + static_cast<long>(n));
  }

  void extend(SequenceId id) {
    const auto& script = scripts_.at(id);
    const int length = static_cast<int>(ref_.seq(id).tokens.size());
    const int target = std::min(length + uniform(1, bs_ + 2), static_cast<int>(script.size()));
    if (target == length) return finish(id);
    const size_t before = ref_.seq(id).blocks.size();
    const int needed = (target + bs_ - 1) / bs_ - static_cast<int>(before);
    const bool fits = needed <= ref_.available();
    ASSERT_EQ(cache_.reserve(id, target), fits) << where();
    if (!fits) {
      ++failed_reserves_;
      if (coin(0.5)) preempt(random_live());  // what the scheduler does to make room
      return;
    }
    const auto table = cache_.block_table(id);
    for (size_t i = before; i < table.size(); ++i) ref_.take(id, table[i]);
    std::vector<int32_t> written;
    for (int p = length; p < target; ++p)  // now and then a draft token the target rejects
      written.push_back(coin(0.85) ? script[static_cast<size_t>(p)] : uniform(0, 3));
    ref_.write(id, written);
    cache_.set_length(id, target);
    const auto tokens = committed(id);
    cache_.publish(id, tokens, ref_.seq(id).salt);
    ref_.publish(id, tokens);
    note("extend to " + std::to_string(target) + ", publish", id, tokens);
  }

  void truncate(SequenceId id) {
    const int length = static_cast<int>(ref_.seq(id).tokens.size());
    const int to = coin(0.6) ? std::max(0, length - uniform(0, bs_ + 1)) : uniform(0, length);
    cache_.truncate(id, to);
    const int kept = ref_.truncate(id, to);
    note("truncate " + std::to_string(to) + " kept " + std::to_string(kept), id);
    ASSERT_EQ(cache_.length(id), kept) << where() << ": truncate " << length << " -> " << to;
    if (kept < to) ++shared_stops_;
  }

  void release(SequenceId id, bool publish) {
    if (publish) {
      const auto tokens = committed(id);
      cache_.publish(id, tokens, ref_.seq(id).salt);
      ref_.publish(id, tokens);
    }
    note(publish ? "publish, release" : "release", id);
    cache_.release(id);
    ref_.release(id);
    scripts_.erase(id);
  }

  void finish(SequenceId id) {
    const auto tokens = committed(id);
    const uint64_t salt = ref_.seq(id).salt;
    release(id, /*publish=*/true);
    history_.emplace_back(salt, tokens);
    if (history_.size() > 8) history_.erase(history_.begin());
  }

  void preempt(SequenceId id) {
    const auto script = scripts_.at(id);
    const auto tokens = committed(id);
    const uint64_t salt = ref_.seq(id).salt;
    release(id, /*publish=*/true);
    start(script, tokens, salt);
  }

  void check() {
    const int num_blocks = cache_.num_blocks();
    for (int32_t b = 0; b < num_blocks; ++b) {
      ASSERT_EQ(cache_.pool().refs(b), static_cast<int>(ref_.block(b).owners.size()))
          << where() << ": refs of block " << b;
      ASSERT_EQ(cache_.pool().is_cached(b), ref_.block(b).indexed) << where() << ": block " << b;
    }
    // No leak, no double free: every block is free, evictable or held.
    ASSERT_EQ(cache_.used_blocks(), ref_.owned_count()) << where();
    ASSERT_EQ(cache_.evictable_blocks(), static_cast<int>(ref_.lru().size())) << where();
    ASSERT_EQ(cache_.free_blocks(), ref_.available()) << where();
    ASSERT_EQ(cache_.free_blocks() + cache_.used_blocks(), num_blocks) << where();
    ASSERT_EQ(cache_.cached_blocks(), ref_.indexed_count()) << where();
    for (auto& [id, s] : ref_.sequences()) {
      ASSERT_EQ(cache_.length(id), static_cast<int>(s.tokens.size())) << where();
      const auto table = cache_.block_table(id);
      ASSERT_EQ(std::vector<int32_t>(table.begin(), table.end()), s.blocks) << where();
      // Positions from its length on (the ones it will write) are in blocks only it holds.
      for (size_t i = s.tokens.size() / static_cast<size_t>(bs_); i < s.blocks.size(); ++i)
        ASSERT_EQ(cache_.pool().refs(s.blocks[i]), 1)
            << where() << ": seq " << id << " block " << i;
    }
    // Every reachable content is found, and holds what its key says.
    for (const auto& [key, b] : ref_.keys()) {
      const auto& [salt, tokens] = key;
      const size_t index = tokens.size() / static_cast<size_t>(bs_) - 1;
      ASSERT_TRUE(ref_.holds(b, tokens, index, salt)) << where();
      const auto match = cache_.match_prefix(tokens, salt, static_cast<int>(tokens.size()));
      ASSERT_EQ(match.blocks, static_cast<int>(index) + 1)
          << where() << ": cached content of block " << b << " not found";
    }
    ASSERT_EQ(cache_.prefix_counters().queries, counters_.queries) << where();
    ASSERT_EQ(cache_.prefix_counters().hits, counters_.hits) << where();
  }

  std::unique_ptr<Backend> backend_;
  PagedKvCache cache_;
  KvCacheReference ref_;
  std::mt19937_64 rng_;
  int bs_;
  int max_len_;
  int step_ = 0;
  std::vector<std::vector<int32_t>> families_;
  std::map<SequenceId, std::vector<int32_t>> scripts_;
  std::vector<std::pair<uint64_t, std::vector<int32_t>>> history_;  // finished: salt, tokens
  PrefixCacheCounters counters_;
  std::deque<std::string> log_;
  int shared_stops_ = 0;
  int failed_reserves_ = 0;
};

void PrintTo(const PropertyCase& c, std::ostream* os) {
  *os << "seed " << c.seed << ", " << c.num_blocks << " blocks of " << c.block_size << ", at most "
      << c.max_evictable << " evictable";
}

class KvCachePropertyTest : public ::testing::TestWithParam<PropertyCase> {};

TEST_P(KvCachePropertyTest, MatchesTheReferenceModelAfterEveryStep) {
  PrefixCacheRun run(GetParam());
  run.run(10000);
  EXPECT_TRUE(run.reached_every_case()) << run.coverage();
}

// Pools from roomy to tight; the prefix cache unbounded, small, or empty
// (blocks are then shared only while a session holds them).
INSTANTIATE_TEST_SUITE_P(KvCacheProperty, KvCachePropertyTest,
                         ::testing::Values(PropertyCase{1, 40, 4, 1 << 20},
                                           PropertyCase{2, 24, 4, 1 << 20},
                                           PropertyCase{3, 16, 4, 6}, PropertyCase{4, 20, 2, 8},
                                           PropertyCase{5, 12, 3, 1 << 20},
                                           PropertyCase{6, 30, 2, 0}, PropertyCase{7, 18, 4, 3},
                                           PropertyCase{8, 28, 3, 12}),
                         [](const ::testing::TestParamInfo<PropertyCase>& param_info) {
                           return "seed" + std::to_string(param_info.param.seed);
                         });

}  // namespace
}  // namespace tandem
