#include "train/run_kind.h"

#include "util/error.h"

namespace rlf {

std::unique_ptr<RunKind> make_run_kind(const TrainConfig& cfg) {
  switch (cfg.kind) {
    case TrainerKind::Rl: return make_rl_kind(cfg);
    case TrainerKind::Sft: return make_sft_kind(cfg);
    case TrainerKind::Dpo: return make_preference_kind(cfg);
    case TrainerKind::Rm: return cfg.process.enabled ? make_process_kind(cfg) : make_reward_model_kind(cfg);
  }
  fail("unknown trainer kind");
}

void attach_lora_to_lm(RunContext& r) {
  if (!r.cfg.lora.enabled) return;
  check(!r.policy.model()->config().is_classifier(), r.cfg.source, ": lora.enabled: ", r.cfg.model_path().string(),
        " is a ", r.policy.model()->config().architecture, " (a classifier); trainer.kind = \"",
        r.cfg.raw["trainer"]["kind"].get<std::string>(), "\" trains causal LMs");
  r.attach_lora();
}

TrainerOptions offline_trainer_options(const TrainConfig& cfg) {
  TrainerOptions to = cfg.trainer;
  to.log_entropy = false;
  to.log_rollout_agreement = false;  // the responses were not sampled by this policy
  return to;
}

}  // namespace rlf
