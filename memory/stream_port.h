#pragma once
// How a core asks for streamed weights (firmware OpKind::StreamIn) without knowing what serves them: the
// simulator implements it with a TLM-2.0 initiator talking to the MemoryX target (memory/memoryx.h).
// Pure C++: no SystemC.
#include <cstdint>

#include "hw/coord.h"

namespace wafer::memory {

class StreamPort {
 public:
  virtual ~StreamPort() = default;
  // Requests `bytes` through edge channel `channel` at cycle `at` (local time of the step); returns the
  // cycle the last byte has crossed the port and the channel and has entered the fabric at the channel's
  // edge tile (memory/edge_channels.h).
  virtual hw::Cycle fetch(hw::Cycle at, std::uint64_t bytes, std::uint32_t channel) = 0;
};

}  // namespace wafer::memory
