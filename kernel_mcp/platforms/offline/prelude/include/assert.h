// kernel-mcp stand-in for <assert.h> in an offline device-only compile. HIP's device assert
// reports through ROCm's device library and then traps; without that library a failed assert
// traps (s_trap) at once. Not #pragma once: NDEBUG is read at every inclusion, as the C library does.
#undef assert
#ifdef NDEBUG
#define assert(e) ((void)0)
#else
#define assert(e) ((e) ? (void)0 : __builtin_trap())
#endif
