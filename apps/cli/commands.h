// One factory per `rlf` command; each lives in its own cmd_<name>.cpp.
// commands.cpp lists them, in help order, in the binary's command table.
#pragma once

#include "apps/cli/cli.h"

namespace rlf::cli {

CommandSpec make_train_command();
CommandSpec make_compare_command();
CommandSpec make_reflexion_command();
CommandSpec make_config_command();
CommandSpec make_demo_command();
CommandSpec make_generate_command();
CommandSpec make_serve_command();
CommandSpec make_dashboard_command();
CommandSpec make_eval_command();
CommandSpec make_eval_rm_command();
CommandSpec make_tokenize_command();
CommandSpec make_chat_template_render_command();
CommandSpec make_chat_template_check_command();
CommandSpec make_convert_command();
CommandSpec make_export_command();
CommandSpec make_merge_command();
CommandSpec make_info_command();
CommandSpec make_bench_generate_command();
CommandSpec make_bench_tokenize_command();
CommandSpec make_bench_train_command();
CommandSpec make_exec_command();
CommandSpec make_verify_code_command();
CommandSpec make_bench_exec_command();
CommandSpec make_bench_serve_learn_command();
CommandSpec make_verify_math_command();

}  // namespace rlf::cli
