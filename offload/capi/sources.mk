# The C++ sources behind the C ABI (forein_offload.h), relative to the
# repository root: one list for both builds. CMake reads it (offload/
# CMakeLists.txt, library forein_offload_capi) and PostgreSQL's PGXS build
# includes it (pg_extension/Makefile), so the module compiles exactly what
# the tested library does. Engine code: key words only (no tree).
FOREIN_CAPI_SOURCES = \
	engine/src/key.cc \
	offload/core/backend.cc \
	offload/core/control_plane.cc \
	offload/core/invalid_nodes.cc \
	offload/core/manager.cc \
	offload/core/node_table.cc \
	offload/core/registry.cc \
	offload/core/settings.cc \
	offload/backends/dpa/dpa_backend.cc \
	offload/backends/dpa/dpa_batch.cc \
	offload/backends/dpa/dpa_device.cc \
	offload/backends/dpa/dpa_image.cc \
	offload/backends/dpa/dpa_layout.cc \
	offload/backends/dpa/dpa_planner.cc \
	offload/backends/dpa/pla.cc \
	offload/backends/fattree/compare64.cc \
	offload/backends/fattree/fattree_backend.cc \
	offload/backends/fattree/fattree_batch.cc \
	offload/backends/fattree/fattree_device.cc \
	offload/backends/fattree/fattree_image.cc \
	offload/backends/fattree/fattree_plan.cc \
	offload/backends/fattree/fattree_planner.cc \
	offload/backends/fattree/range_tables.cc \
	offload/backends/fpga/fpga_backend.cc \
	offload/backends/fpga/fpga_batch.cc \
	offload/backends/fpga/fpga_device.cc \
	offload/backends/fpga/fpga_image.cc \
	offload/backends/fpga/fpga_planner.cc \
	offload/backends/none/none_backend.cc \
	offload/backends/switch_lpm/entry_diff.cc \
	offload/backends/switch_lpm/layers.cc \
	offload/backends/switch_lpm/lpm_batch.cc \
	offload/backends/switch_lpm/lpm_image.cc \
	offload/backends/switch_lpm/lpm_snapshot.cc \
	offload/backends/switch_lpm/lpm_table.cc \
	offload/backends/switch_lpm/prefix_cover.cc \
	offload/backends/switch_lpm/selection.cc \
	offload/backends/switch_lpm/switch_lpm_backend.cc \
	offload/backends/switch_lpm/switch_lpm_device.cc \
	offload/backends/switch_lpm/switch_lpm_planner.cc \
	offload/backends/switch_visibility/switch_visibility_backend.cc \
	offload/backends/switch_visibility/visibility_table.cc \
	offload/capi/forein_offload.cc
