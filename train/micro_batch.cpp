#include "train/micro_batch.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <string>
#include <type_traits>

#include "algorithms/distill_divergence.h"
#include "util/error.h"

namespace rlf {

namespace {

namespace ts = token_stream;

// Where each episode lands: episode b's positions [0, length) (position t
// predicting token t + 1) at [row, column + t] of a [rows, columns] grid; the
// rest is padding. Every stream is copied through the layout alone, so a
// packed layout (several episodes per row up to a token budget, issue 35) is
// another plan_* function plus a per-token sequence index, not a new copy.
struct Placement {
  int64_t row = 0;
  int64_t column = 0;
  int64_t length = 0;
};
struct Layout {
  int64_t rows = 0;
  int64_t columns = 0;
  std::vector<Placement> at;  // [episodes]
};

// Right padding: episode b on row b from column 0; columns = the longest episode's length - 1.
Layout plan_padded(const std::vector<const Episode*>& eps) {
  Layout l;
  l.rows = static_cast<int64_t>(eps.size());
  l.columns = 1;
  for (size_t b = 0; b < eps.size(); ++b) {
    check(eps[b]->tokens.size() >= 2, "an episode needs at least two tokens");
    const int64_t length = static_cast<int64_t>(eps[b]->tokens.size()) - 1;
    l.at.push_back({.row = static_cast<int64_t>(b), .column = 0, .length = length});
    l.columns = std::max(l.columns, length);
  }
  return l;
}

template <class T>
torch::Tensor upload(std::vector<T>& v, std::vector<int64_t> shape, torch::ScalarType dtype, torch::Device device) {
  return torch::from_blob(v.data(), shape, torch::TensorOptions().dtype(dtype)).to(device, /*non_blocking=*/false,
                                                                                   /*copy=*/true);
}

// The value a Fill stands for at column j of a stream with `width` values per token.
double fill_value(ts::Fill f, int64_t j, int64_t width) {
  switch (f) {
    case ts::Fill::Zero: return 0.0;
    case ts::Fill::NaN: return std::nanf("");
    case ts::Fill::Column: return static_cast<double>(j);
    case ts::Fill::UniformLogprob: return -std::log(static_cast<float>(width));
    case ts::Fill::NoId: return -1.0;
  }
  return 0.0;
}

struct StreamSpec {
  Stream key;
  const char* name;
  ts::Batch batch;
  ts::Width width;
  ts::Fill missing, pad;
  ts::Mask mask;
};

// Copies one per-token stream of the episodes (Episode::*member) into the
// micro-batch as `spec` (its row in env/token_streams.h) says.
template <class T>
void put_stream(MicroBatch& mb, const std::vector<T> Episode::*member, const StreamSpec& spec,
                const std::vector<const Episode*>& eps, const Layout& l, torch::Device device) {
  if (spec.batch == ts::Batch::Never) return;
  auto has = [&](const Episode* e) { return !(e->*member).empty(); };
  const bool present = spec.batch == ts::Batch::Always ||
                       (spec.batch == ts::Batch::Any ? std::any_of(eps.begin(), eps.end(), has)
                                                     : std::all_of(eps.begin(), eps.end(), has));
  if (!present) return;
  // PerTokenK: from the first episode that has the stream; PerTokenUpToK: the largest.
  const bool up_to = spec.width == ts::Width::PerTokenUpToK;
  size_t width = spec.width == ts::Width::One ? 1 : 0;
  for (const Episode* e : eps) {
    const size_t n = e->tokens.size(), size = (e->*member).size();
    if (size == 0 && spec.batch != ts::Batch::Always) continue;
    if (up_to) {
      check(n > 0 && size % n == 0, "an episode's ", spec.name, " must have k entries per token (", n,
            " tokens), got ", size);
      width = std::max(width, size / n);
      continue;
    }
    if (width == 0) width = size / n;
    check(width > 0 && size == n * width, "an episode's ", spec.name, " must have ",
          width > 1 ? std::to_string(width) + " entries" : "one entry", " per token (", n, " tokens), got ", size);
  }
  using Out = std::conditional_t<std::is_floating_point_v<T>, float, int64_t>;
  const int64_t W = static_cast<int64_t>(width), C = l.columns;
  std::vector<Out> out(static_cast<size_t>(l.rows * C * W));
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<Out>(fill_value(spec.pad, static_cast<int64_t>(i) % W, W));
  std::vector<float> mask(spec.mask == ts::Mask::None ? 0 : static_cast<size_t>(l.rows * C), 0.0f);
  for (size_t b = 0; b < eps.size(); ++b) {
    const std::vector<T>& v = eps[b]->*member;
    const int64_t own = v.empty() ? W : static_cast<int64_t>(v.size() / eps[b]->tokens.size());  // this episode's k
    const Placement& p = l.at[b];
    for (int64_t t = 0; t < p.length; ++t) {
      const int64_t at = p.row * C + p.column + t;
      for (int64_t j = 0; j < W; ++j) {
        Out& o = out[static_cast<size_t>(at * W + j)];
        if (v.empty()) {
          o = static_cast<Out>(fill_value(spec.missing, j, W));
          continue;
        }
        if (j >= own) continue;  // PerTokenUpToK: past this episode's k, the pad fill
        const T x = v[static_cast<size_t>((t + 1) * own + j)];
        const bool keep = spec.mask != ts::Mask::Finite || std::isfinite(static_cast<double>(x));
        o = keep ? static_cast<Out>(x) : static_cast<Out>(fill_value(spec.missing, j, W));
        if (spec.mask != ts::Mask::None) mask[static_cast<size_t>(at)] = keep ? 1.0f : 0.0f;
      }
    }
  }
  std::vector<int64_t> shape{l.rows, C};
  if (spec.width != ts::Width::One) shape.push_back(W);
  mb.set(spec.key, upload(out, shape, std::is_floating_point_v<T> ? torch::kFloat32 : torch::kInt64, device));
  if (spec.mask != ts::Mask::None) mb.set_mask(spec.key, upload(mask, {l.rows, C}, torch::kFloat32, device));
}

// Every row of RLF_TOKEN_STREAMS, copied.
void put_token_streams(MicroBatch& mb, const std::vector<const Episode*>& eps, const Layout& l, torch::Device device) {
#define RLF_PUT_STREAM(type, name, batch, width, missing, pad, mask)                                      \
  put_stream<type>(mb, &Episode::name,                                                                   \
                   {Stream::name, #name, ts::Batch::batch, ts::Width::width, ts::Fill::missing, ts::Fill::pad, \
                    ts::Mask::mask},                                                                     \
                   eps, l, device);
  RLF_TOKEN_STREAMS(RLF_PUT_STREAM)
#undef RLF_PUT_STREAM
}

// input_ids, targets, positions (continuing over a row's padding) and key_mask from Episode::tokens.
void put_layout(MicroBatch& mb, const std::vector<const Episode*>& eps, const Layout& l, torch::Device device) {
  const size_t n = static_cast<size_t>(l.rows * l.columns);
  std::vector<int64_t> ids(n, 0), tgt(n, 0), pos(n, 0);
  std::vector<uint8_t> valid(n, 0);
  for (int64_t r = 0; r < l.rows; ++r)
    for (int64_t c = 0; c < l.columns; ++c) pos[static_cast<size_t>(r * l.columns + c)] = c;
  for (size_t b = 0; b < eps.size(); ++b) {
    const Placement& p = l.at[b];
    for (int64_t t = 0; t < p.length; ++t) {
      const size_t at = static_cast<size_t>(p.row * l.columns + p.column + t);
      ids[at] = eps[b]->tokens[static_cast<size_t>(t)];
      tgt[at] = eps[b]->tokens[static_cast<size_t>(t + 1)];
      pos[at] = t;
      valid[at] = 1;
    }
  }
  mb.set(Stream::input_ids, upload(ids, {l.rows, l.columns}, torch::kInt64, device));
  mb.set(Stream::targets, upload(tgt, {l.rows, l.columns}, torch::kInt64, device));
  mb.set(Stream::positions, upload(pos, {l.rows, l.columns}, torch::kInt64, device));
  mb.set(Stream::key_mask, torch::from_blob(valid.data(), {l.rows, l.columns}, torch::kUInt8)
                               .to(device, torch::kBool, /*non_blocking=*/false, /*copy=*/true));
}

// A [rows, columns] fp32 stream derived per token from per-episode fields:
// value(episode, token index) on each episode's positions, 0 on padding.
template <class F>
torch::Tensor derived_stream(const std::vector<const Episode*>& eps, const Layout& l, torch::Device device, F value) {
  std::vector<float> out(static_cast<size_t>(l.rows * l.columns), 0.0f);
  for (size_t b = 0; b < eps.size(); ++b) {
    const Placement& p = l.at[b];
    for (int64_t t = 0; t < p.length; ++t)
      out[static_cast<size_t>(p.row * l.columns + p.column + t)] = value(*eps[b], static_cast<size_t>(t + 1));
  }
  return upload(out, {l.rows, l.columns}, torch::kFloat32, device);
}

// off_policy and shaped.
void put_derived(MicroBatch& mb, const std::vector<const Episode*>& eps, const Layout& l, torch::Device device,
                 int64_t current_version) {
  mb.set(Stream::off_policy, derived_stream(eps, l, device, [&](const Episode& e, size_t i) {
           const bool stale = current_version >= 0 && !e.policy_version.empty() && e.policy_version[i] >= 0 &&
                              e.policy_version[i] < current_version;
           return (!e.on_policy || stale) ? 1.0f : 0.0f;
         }));
  const auto refined = [](const Episode* e) { return e->source == EpisodeSource::Refinement; };
  if (std::any_of(eps.begin(), eps.end(), refined))
    mb.set(Stream::shaped, derived_stream(eps, l, device, [&](const Episode& e, size_t) {
             return refined(&e) ? 1.0f : 0.0f;
           }));
}

// ratings and the seq_* streams.
void put_sequence_streams(MicroBatch& mb, const std::vector<const Episode*>& eps, torch::Device device) {
  const int64_t B = static_cast<int64_t>(eps.size());
  size_t K = 0;
  for (const Episode* e : eps) K = std::max(K, e->ratings.size());
  if (K > 0) {
    std::vector<float> r(static_cast<size_t>(B) * K, std::nanf(""));
    for (int64_t b = 0; b < B; ++b) {
      check(eps[b]->ratings.empty() || eps[b]->ratings.size() == K, "the episodes of a micro-batch rate ",
            eps[b]->ratings.size(), " and ", K, " attributes");
      std::copy(eps[b]->ratings.begin(), eps[b]->ratings.end(), r.begin() + static_cast<std::ptrdiff_t>(b * K));
    }
    mb.set(Stream::ratings, upload(r, {B, static_cast<int64_t>(K)}, torch::kFloat32, device));
  }
  auto group = torch::empty({B}, torch::kInt64), reward = torch::empty({B}, torch::kFloat64);
  std::vector<float> correct(B), accuracy(B);
  for (int64_t b = 0; b < B; ++b) {
    group[b] = eps[b]->group;
    reward[b] = eps[b]->reward ? *eps[b]->reward : std::nan("");
    correct[b] = eps[b]->correct ? (*eps[b]->correct ? 1.0f : 0.0f) : std::nanf("");
    accuracy[b] = eps[b]->group_accuracy >= 0 ? static_cast<float>(eps[b]->group_accuracy) : std::nanf("");
  }
  mb.set(Stream::seq_group, group);
  mb.set(Stream::seq_reward, reward);
  mb.set(Stream::seq_correct, upload(correct, {B}, torch::kFloat32, device));
  mb.set(Stream::seq_accuracy, upload(accuracy, {B}, torch::kFloat32, device));
}

}  // namespace

const char* stream_name(Stream s) {
  static constexpr const char* names[] = {
#define RLF_STREAM_NAME(type, name, ...) #name,
      RLF_TOKEN_STREAMS(RLF_STREAM_NAME)
#undef RLF_STREAM_NAME
      "input_ids", "targets", "positions", "key_mask", "off_policy", "shaped",
      "ratings", "seq_group", "seq_reward", "seq_correct", "seq_accuracy"};
  static_assert(std::size(names) == n_streams, "stream_name: one name per Stream key");
  return names[static_cast<size_t>(s)];
}

const torch::Tensor& MicroBatch::operator[](Stream s) const {
  const torch::Tensor& t = tensors_[static_cast<size_t>(s)];
  check(t.defined(), "the micro-batch has no stream '", stream_name(s), "'");
  return t;
}

const torch::Tensor& MicroBatch::mask(Stream s) const {
  const torch::Tensor& t = masks_[static_cast<size_t>(s)];
  check(t.defined(), "the micro-batch has no mask of stream '", stream_name(s), "'");
  return t;
}

torch::Tensor MicroBatch::weight_where(Stream s) const {
  const torch::Tensor& w = (*this)[Stream::loss_weight];
  return has_mask(s) ? w * mask(s) : torch::zeros_like(w);
}

torch::Tensor forward_micro_batch(CausalLMImpl& model, const MicroBatch& mb) {
  const auto on = [&](Stream s) { return mb[s].to(model.device()); };
  return model.forward_hidden(on(Stream::input_ids), on(Stream::positions), nullptr, on(Stream::key_mask));
}

torch::Tensor MicroBatchForward::to_grid(const torch::Tensor& x) const {
  if (!padding_free()) return x;
  std::vector<int64_t> shape{rows, columns};
  for (int64_t d = 2; d < x.dim(); ++d) shape.push_back(x.size(d));
  return tokens_to_grid(x.dim() == 2 ? x.unsqueeze(-1) : x, heads, rows * columns).view(shape);
}

torch::Tensor MicroBatchForward::from_grid(const torch::Tensor& x) const {
  if (!padding_free()) return x;
  std::vector<int64_t> rest{1, -1};
  for (int64_t d = 2; d < x.dim(); ++d) rest.push_back(x.size(d));
  return x.reshape({rows * columns, -1}).index_select(0, heads.to(x.device())).view(rest);
}

MicroBatchForward forward_for_heads(CausalLMImpl& model, const MicroBatch& mb, int64_t from) {
  MicroBatchForward out;
  const torch::Tensor& key_mask = mb[Stream::key_mask];
  out.rows = key_mask.size(0), out.columns = key_mask.size(1);
  const int64_t real = key_mask.sum().item<int64_t>();
  if (!padding_free_applies(model.memory_levers(), real, key_mask.numel())) {
    out.hidden = forward_micro_batch(model, mb);
    out.targets = mb[Stream::targets];
    return out;
  }
  const auto on = [&](const torch::Tensor& t) { return t.to(model.device()); };
  const torch::Tensor mask = on(key_mask);
  const torch::Tensor tokens = mask.reshape({-1}).nonzero().view({-1});  // row by row: each sequence in order
  const auto hidden = model.forward_hidden(on(mb[Stream::input_ids]), on(mb[Stream::positions]), nullptr, mask, tokens);
  // The heads' positions: real tokens at columns >= from, as rows of `hidden`.
  const torch::Tensor column = tokens.remainder(out.columns);
  const torch::Tensor rows_read = (column >= from).nonzero().view({-1});
  out.heads = tokens.index_select(0, rows_read);
  out.hidden = rows_read.numel() == tokens.numel() ? hidden : hidden.index_select(1, rows_read);
  out.targets = out.from_grid(on(mb[Stream::targets]));
  return out;
}

MicroBatch make_micro_batch(const std::vector<const Episode*>& eps, torch::Device device, int64_t current_version) {
  check(!eps.empty(), "make_micro_batch: no episodes");
  const Layout layout = plan_padded(eps);
  MicroBatch mb;
  mb.n_sequences = static_cast<int64_t>(eps.size());
  put_token_streams(mb, eps, layout, device);
  put_layout(mb, eps, layout, device);
  put_derived(mb, eps, layout, device, current_version);
  put_sequence_streams(mb, eps, device);
  return mb;
}

namespace {

// An episode's positions (what a micro-batch's token budget counts).
int64_t positions_of(const Episode* e) { return std::max<int64_t>(0, static_cast<int64_t>(e->tokens.size()) - 1); }

// Whether a micro-batch holding `n` episodes of `tokens` positions is full
// before one of `next` more episodes and `next_tokens` positions.
bool full_before(size_t n, int64_t tokens, size_t next, int64_t next_tokens, int64_t size, int64_t max_tokens) {
  if (n == 0) return false;
  return max_tokens > 0 ? tokens + next_tokens > max_tokens : n + next > static_cast<size_t>(size);
}

}  // namespace

std::vector<std::vector<const Episode*>> split_micro_batches(const std::vector<const Episode*>& episodes, int64_t size,
                                                             int64_t max_tokens) {
  check(size > 0, "micro-batch size must be > 0 (got ", size, ")");
  check(max_tokens >= 0, "micro-batch token budget must be >= 0 (got ", max_tokens, ")");
  std::vector<size_t> order(episodes.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return episodes[a]->tokens.size() < episodes[b]->tokens.size(); });
  std::vector<std::vector<const Episode*>> out;
  std::vector<const Episode*> cur;
  int64_t tokens = 0;
  for (size_t i : order) {
    const int64_t n = positions_of(episodes[i]);
    if (full_before(cur.size(), tokens, 1, n, size, max_tokens)) out.push_back(std::move(cur)), cur.clear(), tokens = 0;
    cur.push_back(episodes[i]);
    tokens += n;
  }
  if (!cur.empty()) out.push_back(std::move(cur));
  return out;
}

std::vector<std::vector<const Episode*>> split_micro_batches_by_group(const std::vector<const Episode*>& episodes,
                                                                      int64_t size, int64_t max_tokens) {
  check(size > 0, "micro-batch size must be > 0 (got ", size, ")");
  check(max_tokens >= 0, "micro-batch token budget must be >= 0 (got ", max_tokens, ")");
  std::vector<int64_t> ids;
  std::vector<std::vector<const Episode*>> groups;
  std::vector<size_t> longest;
  for (const Episode* e : episodes) {
    auto it = std::find(ids.begin(), ids.end(), e->group);
    const size_t g = static_cast<size_t>(it - ids.begin());
    if (it == ids.end()) ids.push_back(e->group), groups.emplace_back(), longest.push_back(0);
    groups[g].push_back(e);
    longest[g] = std::max(longest[g], e->tokens.size());
  }
  std::vector<size_t> order(groups.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return longest[a] < longest[b]; });
  std::vector<std::vector<const Episode*>> out;
  std::vector<const Episode*> cur;
  int64_t tokens = 0;
  for (size_t g : order) {
    int64_t n = 0;
    for (const Episode* e : groups[g]) n += positions_of(e);
    if (full_before(cur.size(), tokens, groups[g].size(), n, size, max_tokens))
      out.push_back(std::move(cur)), cur.clear(), tokens = 0;
    cur.insert(cur.end(), groups[g].begin(), groups[g].end());
    tokens += n;
  }
  if (!cur.empty()) out.push_back(std::move(cur));
  return out;
}

namespace {

// Runs `per_position` ([B, T] fp32 from one micro-batch, position t
// predicting token t + 1) over every episode, no gradient:
// out[i][t] = its value at position t - 1 for t >= 1 (out[i][0] = 0).
template <class F>
std::vector<std::vector<float>> per_token_pass(CausalLMImpl& model, const std::vector<const Episode*>& episodes,
                                               int64_t micro_batch_size, F per_position) {
  check(micro_batch_size > 0, "micro-batch size must be > 0 (got ", micro_batch_size, ")");
  torch::NoGradGuard ng;
  std::vector<std::vector<float>> out(episodes.size());
  for (size_t i0 = 0; i0 < episodes.size(); i0 += static_cast<size_t>(micro_batch_size)) {
    std::vector<const Episode*> mb_eps;
    for (size_t i = i0; i < std::min(episodes.size(), i0 + static_cast<size_t>(micro_batch_size)); ++i)
      mb_eps.push_back(episodes[i]);
    MicroBatch mb = make_micro_batch(mb_eps, model.device());
    torch::Tensor values = per_position(mb).to(torch::kCPU, torch::kFloat32).contiguous();
    const int64_t T = values.size(1);
    const float* p = values.data_ptr<float>();
    for (size_t b = 0; b < mb_eps.size(); ++b) {
      const Episode& e = *mb_eps[b];
      auto& v = out[i0 + b];
      v.assign(e.tokens.size(), 0.0f);
      for (size_t t = 1; t < e.tokens.size(); ++t) v[t] = p[b * T + static_cast<int64_t>(t) - 1];
    }
  }
  return out;
}

}  // namespace

int64_t first_weighted_column(const torch::Tensor& weight, const std::vector<torch::Tensor>& term_weights) {
  torch::NoGradGuard ng;
  auto any = weight != 0;
  for (const auto& w : term_weights) {
    if (!w.defined() || w.sizes() != weight.sizes()) return 0;
    any = any | (w != 0);
  }
  const auto cols = any.any(0).nonzero();
  return cols.numel() == 0 ? 0 : cols[0][0].item<int64_t>();
}

std::vector<std::vector<float>> recompute_logprobs(CausalLMImpl& model, const std::vector<const Episode*>& episodes,
                                                   int64_t micro_batch_size, LogprobScope scope, bool replay_mask) {
  return per_token_pass(model, episodes, micro_batch_size, [&](const MicroBatch& mb) {
    const int64_t from = scope == LogprobScope::FromFirstWeighted ? first_weighted_column(mb[Stream::loss_weight]) : 0;
    const MicroBatchForward fw = forward_for_heads(model, mb, from);
    const bool mask = replay_mask && mb.has(Stream::sampling_mask_id);
    const torch::Tensor keep = mask ? fw.from_grid(mb[Stream::sampling_mask_id]) : torch::Tensor();
    return fw.to_grid(model.token_logprobs(fw.hidden, fw.targets, fw.padding_free() ? 0 : from, keep));
  });
}

std::vector<TeacherTopK> teacher_topk(CausalLMImpl& model, const std::vector<const Episode*>& episodes, int64_t k,
                                      int64_t micro_batch_size, std::vector<std::vector<float>>* token_logprobs) {
  check(micro_batch_size > 0, "micro-batch size must be > 0 (got ", micro_batch_size, ")");
  torch::NoGradGuard ng;
  std::vector<TeacherTopK> out(episodes.size());
  if (token_logprobs) token_logprobs->assign(episodes.size(), {});
  for (size_t i0 = 0; i0 < episodes.size(); i0 += static_cast<size_t>(micro_batch_size)) {
    const std::vector<const Episode*> eps(episodes.begin() + static_cast<std::ptrdiff_t>(i0),
                                          episodes.begin() + static_cast<std::ptrdiff_t>(std::min(
                                                                 episodes.size(), i0 + static_cast<size_t>(micro_batch_size))));
    MicroBatch mb = make_micro_batch(eps, model.device());
    const auto hidden = forward_micro_batch(model, mb);
    const int64_t B = hidden.size(0), T = hidden.size(1), from = first_weighted_column(mb[Stream::loss_weight]);
    const int64_t chunk = std::max<int64_t>(1, 8192 / B);
    auto ids = torch::zeros({B, T, k}, torch::kInt32), lps = torch::zeros({B, T, k + 1}, torch::kFloat32);
    auto tok = torch::zeros({B, T}, torch::kFloat32);
    for (int64_t t0 = from; t0 < T; t0 += chunk) {
      const int64_t n = std::min(chunk, T - t0);
      const auto lg = model.logits(hidden.narrow(1, t0, n)).to(torch::kFloat32);  // [B, n, V]
      auto [top, lp] = algo::teacher_topk_buckets(lg, k);
      ids.narrow(1, t0, n).copy_(top.to(torch::kCPU, torch::kInt32));
      lps.narrow(1, t0, n).copy_(lp.to(torch::kCPU));
      const auto target = mb[Stream::targets].narrow(1, t0, n).unsqueeze(-1);
      tok.narrow(1, t0, n).copy_((lg.gather(-1, target).squeeze(-1) - torch::logsumexp(lg, -1)).to(torch::kCPU));
    }
    for (size_t b = 0; b < eps.size(); ++b) {
      const size_t L = eps[b]->tokens.size(), bk = static_cast<size_t>(k);
      TeacherTopK& o = out[i0 + b];
      o.ids.assign(L * bk, 0), o.logprobs.assign(L * (bk + 1), 0.0f);
      const auto row_ids = ids[static_cast<int64_t>(b)].contiguous();
      const auto row_lp = lps[static_cast<int64_t>(b)].contiguous();
      std::copy_n(row_ids.data_ptr<int32_t>(), (L - 1) * bk, o.ids.begin() + bk);
      std::copy_n(row_lp.data_ptr<float>(), (L - 1) * (bk + 1), o.logprobs.begin() + (bk + 1));
      if (!token_logprobs) continue;
      auto& v = (*token_logprobs)[i0 + b];
      v.assign(L, 0.0f);
      const auto row_tok = tok[static_cast<int64_t>(b)].contiguous();
      std::copy_n(row_tok.data_ptr<float>(), L - 1, v.begin() + 1);
    }
  }
  return out;
}

std::vector<std::vector<float>> recompute_values(CausalLMImpl& critic, const std::vector<const Episode*>& episodes,
                                                 int64_t micro_batch_size, int64_t label) {
  check(critic.config().is_classifier() || critic.has_value_head(),
        "recompute_values: the critic has no score head (neither a classifier nor a causal LM with a value head)");
  const int64_t outputs = critic.has_value_head() ? 1 : critic.config().num_labels;
  check(label >= 0 && label < outputs, "recompute_values: label ", label, " outside the head's ", outputs, " outputs");
  return per_token_pass(critic, episodes, micro_batch_size, [&](const MicroBatch& mb) {
    const MicroBatchForward fw = forward_for_heads(critic, mb, 0);
    return fw.to_grid(critic.scores(fw.hidden)).select(2, label);
  });
}

}  // namespace rlf
