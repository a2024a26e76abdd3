#include "train/run_preflight.h"

#include <algorithm>
#include <filesystem>

#include "model/loader.h"
#include "model/lora.h"
#include "util/error.h"
#include "util/write_target.h"

namespace rlf {

namespace fs = std::filesystem;

void check_run_paths(const TrainConfig& cfg, bool writes) {
  with_context(cfg.source, [&] {
    const bool rl = cfg.kind == TrainerKind::Rl;
    auto key = [](const std::string& k, const auto& fn) { with_context(k, fn); };
    // model.random_init writes run.out_dir/init on every rank.
    if (writes || !cfg.model.random_init.empty()) key("run.out_dir", [&] { check_dir_target(cfg.run.out_dir); });
    if (writes && !cfg.run.warm_start_cache.empty() && cfg.sft.enabled)
      key("run.warm_start_cache", [&] { check_dir_target(cfg.run.warm_start_cache); });
    if (cfg.lora.enabled && !cfg.lora.init_from.empty())
      key("lora.adapter", [&] { check_lora_adapter_files(cfg.lora.init_from); });
    const bool teacher = rl && cfg.rl.distill.enabled && cfg.rl.distill.teacher == DistillTeacherKind::Model;
    if (teacher) key("distill.teacher_path", [&] { check_model_files(cfg.rl.distill.teacher_path); });
    const bool critic_model = rl && cfg.value.enabled && !cfg.value.model.empty();
    if (critic_model) key("value.model", [&] { check_model_files(cfg.value.model); });
    if (!cfg.run.eval_kl_model.empty()) key("run.eval_kl_model", [&] { check_model_files(cfg.run.eval_kl_model); });
    // The run's files go beside, never over, what it reads.
    std::vector<fs::path> inputs;
    for (const std::string& p : {cfg.model.random_init.empty() ? cfg.model.path : std::string(), cfg.model.tokenizer,
                                 cfg.lora.init_from, teacher ? cfg.rl.distill.teacher_path : std::string(),
                                 critic_model ? cfg.value.model : std::string(), cfg.run.eval_kl_model}) {
      std::error_code ec;
      if (!p.empty() && fs::is_directory(p, ec)) inputs.push_back(p);
    }
    key("run.out_dir", [&] { check_not_an_input_dir(cfg.run.out_dir, inputs); });
  });
}

void check_run_companions(const TrainConfig& cfg, CausalLMImpl& policy, const std::vector<PromptExample>& train) {
  with_context(cfg.source, [&] {
    if (cfg.lora.enabled && !cfg.lora.init_from.empty() && cfg.kind != TrainerKind::Rm)
      with_context("lora.adapter", [&] { check_lora_adapter(policy, cfg.lora.init_from); });
    if (cfg.asks_critic() && cfg.rl.critic.type == "simple_gt" && !train.empty()) {
      const bool any = std::any_of(train.begin(), train.end(), [](const PromptExample& e) { return !e.reference.empty(); });
      check(any, "[critic] type = \"simple_gt\" writes each task's reference answer, and no training prompt has one "
            "(data.reference_field): every critique would fail; choose type = \"simple\", \"text\", \"self\", "
            "\"model\" or \"endpoint\"");
    }
  });
}

}  // namespace rlf
