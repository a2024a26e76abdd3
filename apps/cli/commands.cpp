#include "apps/cli/commands.h"

namespace rlf::cli {

const std::vector<CommandSpec>& command_table() {
  static const std::vector<CommandSpec> table = {
      make_demo_command(),
      make_train_command(),
      make_compare_command(),
      make_reflexion_command(),
      make_config_command(),
      make_generate_command(),
      make_serve_command(),
      make_dashboard_command(),
      make_eval_command(),
      make_eval_rm_command(),
      make_tokenize_command(),
      make_chat_template_render_command(),
      make_chat_template_check_command(),
      make_convert_command(),
      make_export_command(),
      make_merge_command(),
      make_info_command(),
      make_bench_generate_command(),
      make_bench_train_command(),
      make_bench_tokenize_command(),
      make_verify_math_command(),
      make_exec_command(),
      make_verify_code_command(),
      make_bench_exec_command(),
      make_bench_serve_learn_command(),
  };
  return table;
}

}  // namespace rlf::cli
