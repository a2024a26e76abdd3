// rlf demo: the embedded default run (train/demo.h): SFT warm start + GRPO on
// self-generated two-digit addition, held-out pass@1 before and after.
#include <cstdio>
#include <iostream>

#include "apps/cli/commands.h"
#include "apps/cli/runtime.h"
#include "train/demo.h"

namespace rlf::cli {

namespace {

// The demo's table: held-out greedy pass@1 before RL, after RL and for the
// SFT-only control, and one sentence saying what the comparison means.
void print_demo_table(const TrainRunSummary& s, bool clean) {
  std::printf("\n  rlf demo: GRPO on two-digit addition, from %s demonstrations\n",
              clean ? "clean" : "a teacher's carry-dropping");
  std::printf("  (%lld SFT steps, %lld RL steps, %.0f s)\n", static_cast<long long>(s.sft_steps),
              static_cast<long long>(s.steps), s.wall_s);
  std::printf("  +-----------------------------+--------+\n");
  std::printf("  | held-out greedy pass@1      |        |\n");
  std::printf("  +-----------------------------+--------+\n");
  std::printf("  | before RL (after SFT)       | %5.1f%% |\n", 100 * s.pass1_before);
  std::printf("  | after RL                    | %5.1f%% |\n", 100 * s.pass1_after);
  std::printf("  | change                      | %+5.1f  |\n", 100 * (s.pass1_after - s.pass1_before));
  if (s.pass1_control >= 0) {
    std::printf("  +-----------------------------+--------+\n");
    std::printf("  | control: SFT alone for RL's | %5.1f%% |\n", 100 * s.pass1_control);
    std::printf("  |   %4.0f s (%5lld SFT steps)  |        |\n", s.steps_wall_s,
                static_cast<long long>(s.control_sft_steps));
  }
  std::printf("  +-----------------------------+--------+\n");
  if (s.pass1_control >= 0) std::printf("  %s\n", demo_verdict(s.pass1_after, s.pass1_control, clean).c_str());
}

}  // namespace

CommandSpec make_demo_command() {
  CommandSpec c;
  c.name = "demo";
  c.summary = "the embedded default: GRPO against imitation of a carry-dropping teacher, on generated addition";
  c.usage = "";
  c.n_positional_min = c.n_positional_max = 0;
  c.options = {
      {"out", OptKind::String, "runs/demo", "run directory (init/ holds the initial policy)", "DIR"},
      {"seed", OptKind::Int, "0", "seeds the model, the task, SFT and RL", "N", 0, 9.2e18},
      {"set", OptKind::List, "", "override a key of the demo's run config, e.g. --set run.steps=50", "KEY=VALUE"},
      {"clean", OptKind::Flag, "false",
       "clean demonstrations (the teacher never forgets a carry): more SFT then beats RL, as the table says", ""},
      {"json", OptKind::Flag, "false",
       "print only the summary: {pass1_before, pass1_after, pass1_control, verdict, wall_s, steps, ...}", ""},
  };
  c.run = [](const Args& a) {
    // A fixed thread plan unless --threads is given: OpenBLAS 2 threads,
    // LibTorch 1. OpenBLAS splits a product's sums by its thread count, and
    // this small RL run is sensitive to rounding, so a fixed count gives the
    // same numbers on every machine of a CPU type whatever its core count
    // (rlf's own kernels do not depend on the thread count). Two threads:
    // 247 s against 316 s with one (2026-11-22, 2-core Zen 3); more gain
    // little on a 0.6M-parameter policy.
    if (a.given("threads")) configure_threads(a);
    else apply_cpu_threads(CpuThreadPlan{.torch_threads = 1, .blas_threads = 2, .kernel_threads = 2});
    DemoOptions o;
    o.out_dir = a.str("out");
    o.seed = static_cast<uint64_t>(a.integer("seed"));
    o.overrides = a.list("set");
    o.quiet = a.flag("json");
    o.clean = a.flag("clean");
    TrainRunSummary s = run_demo(o);
    if (a.flag("json")) {
      Json j = s.to_json();
      j["demonstrations"] = o.clean ? "clean" : "carry_dropping";
      if (s.pass1_control >= 0) j["verdict"] = demo_verdict(s.pass1_after, s.pass1_control, o.clean);
      std::cout << j.dump() << "\n";
    } else {
      print_demo_table(s, o.clean);
    }
    return 0;
  };
  return c;
}

}  // namespace rlf::cli
