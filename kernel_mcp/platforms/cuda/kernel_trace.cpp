// Every kernel's GPU start and end, recorded inside an ordinary run of the benchmark: a CUPTI
// injection library (the driver loads the library CUDA_INJECTION64_PATH names at cuInit and calls
// InitializeInjection). It asks CUPTI for concurrent-kernel activity records, which the GPU stamps
// itself; nothing is replayed or serialised, so the run costs about what it costs without it
// (ncu replays and serialises every kernel: 1.3-3x a plain run on the project's workspaces).
//
// Each process that initialises CUDA writes its own file, kernels-<pid>.tsv, in the folder
// KERNEL_MCP_KERNEL_TRACE_DIR names, when it exits normally: one line per kernel, tab-separated
// (start_ns, end_ns, grid x y z, block x y z, registers per thread, static and dynamic shared
// bytes, the demangled name), and a last line "end <records> <dropped>" so the reader can tell a
// complete file from one cut short. The record type is the newest the installed CUPTI header
// defines (KMCP_KERNEL_RECORD, chosen by the build).
#include <cupti.h>
#include <cxxabi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <unistd.h>

#ifndef KMCP_KERNEL_RECORD
#error "KMCP_KERNEL_RECORD names the CUpti_ActivityKernel version to read"
#endif

namespace {

constexpr size_t kBufferBytes = 8u << 20;
std::mutex g_lock;
FILE* g_out = nullptr;
unsigned long long g_records = 0;
size_t g_dropped = 0;

void CUPTIAPI requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(aligned_alloc(8, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;
}

void write_record(const KMCP_KERNEL_RECORD* k) {
  int status = 0;
  char* plain = abi::__cxa_demangle(k->name ? k->name : "", nullptr, nullptr, &status);
  std::string name = (status == 0 && plain) ? plain : (k->name ? k->name : "?");
  free(plain);
  for (char& c : name)
    if (c == '\t' || c == '\n') c = ' ';
  fprintf(g_out, "%llu\t%llu\t%d\t%d\t%d\t%d\t%d\t%d\t%u\t%d\t%d\t%s\n", (unsigned long long)k->start, (unsigned long long)k->end, k->gridX, k->gridY,
          k->gridZ, k->blockX, k->blockY, k->blockZ, (unsigned)k->registersPerThread, (int)k->staticSharedMemory, (int)k->dynamicSharedMemory,
          name.c_str());
  ++g_records;
}

void CUPTIAPI completed(CUcontext, uint32_t stream, uint8_t* buffer, size_t, size_t valid) {
  std::lock_guard<std::mutex> hold(g_lock);
  CUpti_Activity* record = nullptr;
  while (g_out && cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || record->kind == CUPTI_ACTIVITY_KIND_KERNEL)
      write_record(reinterpret_cast<const KMCP_KERNEL_RECORD*>(record));
  }
  size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(nullptr, stream, &dropped) == CUPTI_SUCCESS) g_dropped += dropped;
  free(buffer);
}

void finish() {
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  std::lock_guard<std::mutex> hold(g_lock);
  if (!g_out) return;
  fprintf(g_out, "end\t%llu\t%zu\n", g_records, g_dropped);
  fclose(g_out);
  g_out = nullptr;
}

}  // namespace

extern "C" int InitializeInjection(void) {
  const char* folder = getenv("KERNEL_MCP_KERNEL_TRACE_DIR");
  if (!folder || !*folder) return 1;
  std::string path = std::string(folder) + "/kernels-" + std::to_string(getpid()) + ".tsv";
  g_out = fopen(path.c_str(), "w");
  if (!g_out) return 0;
  if (cuptiActivityRegisterCallbacks(requested, completed) != CUPTI_SUCCESS || cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS) {
    fprintf(g_out, "error\tCUPTI refused the kernel activity records\n");
    fclose(g_out);
    g_out = nullptr;
    return 0;
  }
  atexit(finish);
  return 1;
}
