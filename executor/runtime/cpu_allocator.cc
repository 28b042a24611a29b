// The tracking CPU allocator (cpu_allocator.h): LibTorch's default CPU
// allocator wrapped to count live bytes and their maximum. Includes only
// c10's allocator header, not <torch/torch.h>.
#include "executor/runtime/cpu_allocator.h"

#include <c10/core/CPUAllocator.h>
#include <torch/version.h>  // TORCH_VERSION_MAJOR / MINOR (the allocate signature below)

#include <atomic>
#include <memory>
#include <mutex>
#include <type_traits>
#include <unordered_map>

namespace pw::exec {

namespace {

std::atomic<int64_t> g_live_bytes{0};
std::atomic<int64_t> g_peak_bytes{0};

// Live blocks by data pointer. The DataPtr handed out has context == data
// (some LibTorch paths use raw_allocate, which asserts exactly that), so the
// size and the inner DataPtr are found here when the block is freed.
struct TrackedBlock {
  c10::DataPtr inner;
  size_t bytes;
};
std::mutex g_blocks_mu;
std::unordered_map<void*, TrackedBlock>& Blocks() {
  static auto* blocks = new std::unordered_map<void*, TrackedBlock>();  // lives for the process
  return *blocks;
}

void DeleteTracked(void* data) {
  TrackedBlock block;
  {
    std::lock_guard<std::mutex> lock(g_blocks_mu);
    auto it = Blocks().find(data);
    if (it == Blocks().end()) return;  // not ours (cannot happen: we only hand out tracked pointers)
    block = std::move(it->second);
    Blocks().erase(it);
  }
  g_live_bytes -= static_cast<int64_t>(block.bytes);
  // block.inner frees the memory through the inner allocator's deleter here.
}

// Wraps the default CPU allocator; counts live bytes and their maximum (the
// one counting allocator: the engine and the benches read it too).
// Allocator::allocate became non-const in LibTorch 2.3.
class PeakTrackingAllocator final : public c10::Allocator {
 public:
  explicit PeakTrackingAllocator(c10::Allocator* inner) : inner_(inner) {}
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 3)
  c10::DataPtr allocate(size_t n) override { return Wrap(n); }
  void copy_data(void* dest, const void* src, std::size_t count) const override { default_copy_data(dest, src, count); }
#else
  c10::DataPtr allocate(size_t n) const override { return Wrap(n); }
#endif
  c10::DeleterFnPtr raw_deleter() const override { return &DeleteTracked; }

 private:
  c10::DataPtr Wrap(size_t n) const {
    c10::DataPtr inner = inner_->allocate(n);
    void* data = inner.get();
    if (data == nullptr) return inner;  // zero-byte allocations are not tracked
    c10::Device device = inner.device();
    {
      std::lock_guard<std::mutex> lock(g_blocks_mu);
      Blocks()[data] = TrackedBlock{std::move(inner), n};
    }
    const int64_t live = g_live_bytes += static_cast<int64_t>(n);
    int64_t peak = g_peak_bytes.load();
    while (live > peak && !g_peak_bytes.compare_exchange_weak(peak, live)) {
    }
    return c10::DataPtr(data, data, &DeleteTracked, device);
  }
  c10::Allocator* inner_;
};

}  // namespace

void InstallTrackingCpuAllocator() {
  static PeakTrackingAllocator* allocator = [] {
    auto* a = new PeakTrackingAllocator(c10::GetDefaultCPUAllocator());  // lives for the process
    c10::SetCPUAllocator(a, /*priority=*/100);
    return a;
  }();
  (void)allocator;
}

int64_t TrackedCpuBytes() { return g_live_bytes.load(); }
int64_t TrackedCpuPeakBytes() { return g_peak_bytes.load(); }
void ResetTrackedCpuPeak() { g_peak_bytes = g_live_bytes.load(); }

}  // namespace pw::exec
