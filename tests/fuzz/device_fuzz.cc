// Device spec JSON (models/spec/device.h ParseDeviceSpec, `plan --device
// FILE`): parse, derived numbers, and the writer, whose output must read back
// as the same device.
#include <cmath>

#include "base/json_text.h"
#include "models/spec/device.h"
#include "tests/fuzz/fuzz_util.h"

using namespace pw;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  StatusOr<nlohmann::json> doc = ParseJsonText(fuzz::Text(data, size), "device.json");
  if (!doc.ok()) {
    fuzz::CheckPrintable(doc.status().message());
    return 0;
  }
  StatusOr<DeviceSpec> d = ParseDeviceSpec(*doc, "device.json");
  if (!d.ok()) {
    fuzz::CheckPrintable(d.status().message());
    return 0;
  }
  fuzz::Check(d->UsableBytes() > 0, "an accepted device has no usable memory");
  fuzz::Check(std::isfinite(d->ComputeSeconds(1e12)) && d->ComputeSeconds(1e12) > 0,
              "an accepted device computes in non-positive or infinite time");
  StatusOr<DeviceSpec> again = ParseDeviceSpec(DeviceSpecToJson(*d), "written device.json");
  fuzz::Check(again.ok(), "a written device does not read back", again.ok() ? "" : again.status().message());
  fuzz::Check(DeviceSpecToJson(*again) == DeviceSpecToJson(*d), "device round trip changes it");
  return 0;
}
