#include "fpga/fpga_backend.h"

#include <memory>

#include "fpga/fpga_device.h"
#include "fpga/fpga_image.h"
#include "fpga/fpga_planner.h"

namespace forein::offload {

namespace {

std::unique_ptr<Planner> make_planner(const BackendConfig& config) {
  return std::make_unique<fpga::FpgaPlanner>(config);
}

std::unique_ptr<Device> make_device(const BackendConfig& config) {
  return std::make_unique<fpga::FpgaDevice>(config.capacity != 0 ? config.capacity : fpga::kBoardDramBytes);
}

}  // namespace

const BackendInfo kFpgaBackend = {
    "fpga",
    "Honeycomb: an FPGA SmartNIC's interior-node cache (root in on-chip SRAM, interior nodes in 4 GB "
    "on-board DRAM, four-way set associative) walks keys down to the first uncached node",
    kStartHints | kScanExecution,
    "cache bytes",
    fpga::kBoardDramBytes,
    fpga::kNodeBytes,  // a DRAM node's 8 KB slot (the root in on-chip SRAM takes none)
    fpga::fpga_image_hint,
    make_planner,
    make_device,
    fpga::fpga_image_max_bytes,
    fpga::fpga_image_records,
    fpga::fpga_image_usage,
};

}  // namespace forein::offload
