#include "forein/offload/backend.h"

namespace forein::offload {

const char* to_string(BackendStatus status) {
  switch (status) {
    case BackendStatus::kOk: return "ok";
    case BackendStatus::kCapacityExceeded: return "capacity exceeded";
    case BackendStatus::kInvalidEntry: return "invalid entry";
  }
  return "?";
}

}  // namespace forein::offload
