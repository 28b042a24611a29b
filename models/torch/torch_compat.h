// The few LibTorch API differences between Debian's LibTorch 1.13 and the
// LibTorch 2.x (CUDA) builds, in one place. Include after <torch/torch.h>.
//   - Tensor::grad_fn() returns std::shared_ptr<Node> in 1.13 and
//     c10::intrusive_ptr<Node> in recent 2.x: GraphRef / WeakGraphRef name
//     whichever it is, and GraphExpired tests a weak reference.
#pragma once

#include <c10/util/intrusive_ptr.h>

#include <memory>
#include <type_traits>
#include <utility>

namespace pw::models::torch_compat {

using GraphRef = std::decay_t<decltype(std::declval<const at::Tensor&>().grad_fn())>;

template <class P>
struct WeakOf;
template <class T>
struct WeakOf<std::shared_ptr<T>> {
  using type = std::weak_ptr<T>;
};
template <class T>
struct WeakOf<c10::intrusive_ptr<T>> {
  using type = c10::weak_intrusive_ptr<T>;
};

// A weak reference to an autograd graph (the grad_fn of a tensor): does not
// keep the graph alive.
using WeakGraphRef = typename WeakOf<GraphRef>::type;

inline WeakGraphRef MakeWeak(const GraphRef& g) { return WeakGraphRef(g); }
// True once every strong reference to the graph is gone (it was freed).
inline bool GraphExpired(const WeakGraphRef& w) { return w.expired(); }

}  // namespace pw::models::torch_compat
