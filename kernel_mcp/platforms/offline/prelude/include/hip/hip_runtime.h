// kernel-mcp stand-in for <hip/hip_runtime.h> (offline device-only compiles): the prelude is it.
#pragma once
#include "../../kernel_mcp_hip_prelude.h"
