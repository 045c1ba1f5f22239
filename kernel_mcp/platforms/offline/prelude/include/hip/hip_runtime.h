// kernel-mcp device prelude stand-in for <hip/hip_runtime.h> (offline device-only compiles).
#pragma once
#include "../../kernel_mcp_hip_prelude.h"
