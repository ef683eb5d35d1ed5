// Each message's fields, declared once. fields(visitor, message) names every
// field of a struct in wire order; the encoder (FieldWriter) and the decoder
// (FieldReader, field_codec.h) both walk these lists, so the order and the
// names in errors cannot drift apart. A field is a scalar, an enum (its
// underlying integer), a string, a vector (a u32 count, then the elements),
// or a struct with a list of its own here.
//
// Changing a list changes the wire: bump kFormatVersion (messages.h).
// What fields imply about each other is checked after reading
// (messages.cpp, check()).
#pragma once

#include <concepts>
#include <type_traits>
#include <utility>

#include "cluster/wire/messages.h"

namespace tandem::wire {

// M is T or const T: one list serves the writer (const) and the reader.
template <class M, class T>
concept Is = std::same_as<std::remove_const_t<M>, T>;

template <class V, Is<SamplingParams> M>
void fields(V& v, M& m) {
  v("temperature", m.temperature);
  v("top_k", m.top_k);
  v("top_p", m.top_p);
  v("seed", m.seed);
  v("min_p", m.min_p);
  v("coupling", m.coupling);
}

template <class V, Is<LogitProcessing> M>
void fields(V& v, M& m) {
  v("presence_penalty", m.presence_penalty);
  v("frequency_penalty", m.frequency_penalty);
  v("repetition_penalty", m.repetition_penalty);
  v("bias_tokens", m.bias_tokens);
  v("bias_values", m.bias_values);
  v("min_tokens", m.min_tokens);
  v("masked_stop_ids", m.masked_stop_ids);
  v("prompt_length", m.prompt_length);
}

template <class V, Is<DraftStep::Entry> M>
void fields(V& v, M& m) {
  v("session", m.session);
  v("known", m.known);
  v("new_tokens", m.new_tokens);
  v("gamma", m.gamma);
  v("sampling", m.sampling);
  v("processing", m.processing);
  v("cache_salt", m.cache_salt);
}

template <class V, Is<DraftStep> M>
void fields(V& v, M& m) {
  v("step", m.step);
  v("entries", m.entries);
  v("released", m.released);
}

template <class V, Is<DraftReply> M>
void fields(V& v, M& m) {
  v("step", m.step);
  v("tokens", m.tokens);
  v("seconds", m.seconds);
  v("faults", m.faults);
  v("prefix_queries", m.prefix_queries);
  v("prefix_hits", m.prefix_hits);
}

template <class V, Is<QRows::Entry> M>
void fields(V& v, M& m) {
  v("session", m.session);
  v("rows", m.rows);
}

template <class V, Is<QRows> M>
void fields(V& v, M& m) {
  v("step", m.step);
  v("vocab", m.vocab);
  v("entries", m.entries);
  v("runs", m.runs);
}

template <class V, Is<TargetStep::Sequence> M>
void fields(V& v, M& m) {
  v("seq", m.seq);
  v("start", m.start);
  v("tokens", m.tokens);
  v("logit_count", m.logit_count);
  v("verify", m.verify);
  v("gamma", m.gamma);
  v("sampling", m.sampling);
  v("first_position", m.first_position);
  v("lenience", m.lenience);
  v("session", m.session);
  v("q_source", m.q_source);
  v("q_step", m.q_step);
  v("q_first_row", m.q_first_row);
  v("processing", m.processing);
  v("history", m.history);
  v("logprobs", m.logprobs);
  v("scored", m.scored);
  v("table_from", m.table_from);
  v("table", m.table);
}

template <class V, Is<TargetStep> M>
void fields(V& v, M& m) {
  v("step", m.step);
  v("sequences", m.sequences);
  v("released", m.released);
  v("truncated", m.truncated);
  v("truncated_lengths", m.truncated_lengths);
}

// TokenLogprob::top's (token, logprob) pairs.
template <class V, Is<std::pair<int32_t, float>> M>
void fields(V& v, M& m) {
  v("token", m.first);
  v("logprob", m.second);
}

template <class V, Is<TokenLogprob> M>
void fields(V& v, M& m) {
  v("token", m.token);
  v("logprob", m.logprob);
  v("top", m.top);
}

template <class V, Is<TargetResult::Outcome> M>
void fields(V& v, M& m) {
  v("accepted", m.accepted);
  v("token", m.token);
  v("beta_sum", m.beta_sum);
  v("beta_count", m.beta_count);
  v("fault", m.fault);
  v("logprobs", m.logprobs);
}

template <class V, Is<TargetResult> M>
void fields(V& v, M& m) {
  v("step", m.step);
  v("outcomes", m.outcomes);
  v("prompt_logprobs", m.prompt_logprobs);
  v("forward_seconds", m.forward_seconds);
  v("communication_seconds", m.communication_seconds);
  v("verify_seconds", m.verify_seconds);
}

template <class V, Is<Shutdown> M>
void fields(V& v, M& m) {
  v("exit_code", m.exit_code);
  v("reason", m.reason);
}

template <class V, Is<WorkerReady> M>
void fields(V& v, M& m) {
  v("rank", m.rank);
  v("bytes_read", m.bytes_read);
  v("resident_bytes", m.resident_bytes);
  v("load_seconds", m.load_seconds);
}

}  // namespace tandem::wire
