// The fan-out of one request into engine jobs: `per_prompt` sequences for
// each prompt (n, or best_of when it is larger), each its own engine session
// with its own seed (api::choice_seed). The sequences of a prompt each
// prefill it: sharing its KV blocks between them is the prefix cache's
// business (a fork of the prompt's blocks), not done here.
#include <algorithm>

#include "coordinator/api/choices.h"
#include "coordinator/server/api_service.h"

namespace tandem {

std::vector<CompletionJob> ApiService::choice_jobs(const api::CompletionRequest& request,
                                                   const std::vector<std::vector<int32_t>>& prompts,
                                                   int per_prompt) const {
  std::vector<CompletionJob> jobs;
  jobs.reserve(prompts.size() * static_cast<size_t>(per_prompt));
  // best_of > n ranks by cumulative logprob, which the engine computes only
  // when asked; asking for 0 top alternatives costs the least.
  const bool ranked = per_prompt > request.n;
  for (const std::vector<int32_t>& prompt : prompts) {
    const CompletionJob first = make_job(request, prompt);  // the checks, once per prompt
    for (int i = 0; i < per_prompt; ++i) {
      CompletionJob job = first;
      job.request.sampling.seed = api::choice_seed(request.seed, i);
      if (ranked) {
        // Collected for the ranking (CompletionEnd::cumulative_logprob);
        // the route shows them only when the request asked.
        job.request.logprobs = std::max(job.request.logprobs, 0);
        job.logprobs = true;
      }
      jobs.push_back(std::move(job));
    }
  }
  return jobs;
}

}  // namespace tandem
