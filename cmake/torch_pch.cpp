// The anchor of the one precompiled <torch/torch.h> every LibTorch target
// reuses (CMakeLists.txt: rlf_torch_pch, cmake/rlf_helpers.cmake:
// rlf_use_torch_pch). Deliberately empty.
