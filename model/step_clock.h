// StepClock: where a decoding step's time goes inside the model, for
// benchmarks (`rlf bench generate`). Attached to a CausalLM with
// set_step_clock (null = off, the default: nothing is timed), it adds up,
// over every forward on the fp32 CPU fast path with a KV cache and one
// token per row (a decoding step), the seconds spent:
//  - projections: every layer's matrix products (q, k, v, o, gate, up, down);
//  - attention:   writing the step's keys and values into the cache and
//                 attending over it;
//  - forward:     the whole forward through the layers (the two above, the
//                 norms, RoPE, the gated activation, the residual adds).
// The classifier and sampling run outside the model's forward; the engine
// times them (EngineStats). Timings are wall-clock on the calling thread:
// the parts are nested inside `forward`, so forward >= projections +
// attention. The caller owns the clock and detaches it before it goes.
#pragma once

#include <chrono>
#include <cstdint>

namespace rlf {

struct StepClock {
  double projections_s = 0, attention_s = 0, forward_s = 0;
  int64_t steps = 0;  // forwards timed

  // Adds the time from construction to destruction to *seconds (nothing when null).
  class Span {
   public:
    explicit Span(double* seconds) : seconds_(seconds) {
      if (seconds_) t0_ = std::chrono::steady_clock::now();
    }
    ~Span() {
      if (seconds_) *seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
    }
    Span(const Span&) = delete;
    Span& operator=(const Span&) = delete;

   private:
    double* seconds_;
    std::chrono::steady_clock::time_point t0_;
  };
};

}  // namespace rlf
