#pragma once
// One kernel at a time through the CUPTI Range Profiler (auto range, kernel replay): CUPTI replays the
// launch as many times as the counters need and restores memory between passes.
#include <cuda.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>

#include <string>
#include <vector>

#include "habitat/error.hpp"

namespace habitat::cupti {

[[nodiscard]] inline std::string result_string(CUptiResult r) {
  const char* s = nullptr;
  cuptiGetResultString(r, &s);
  return s ? s : "unknown CUPTI error";
}

inline void check(CUptiResult r, const char* call) {
  if (r != CUPTI_SUCCESS) throw make_error("CUPTI", call, result_string(r) + " (" + std::to_string(int(r)) + ")");
}

class RangeProfiler {
 public:
  // Sets up counters `wanted` (those the chip lacks are dropped; `metrics()` says which remain).
  RangeProfiler(CUcontext ctx, int device_index, const std::vector<std::string>& wanted) : ctx_(ctx) {
    CUpti_Profiler_Initialize_Params init{CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
    check(cuptiProfilerInitialize(&init), "cuptiProfilerInitialize");
    CUpti_Device_GetChipName_Params chip{CUpti_Device_GetChipName_Params_STRUCT_SIZE};
    chip.deviceIndex = static_cast<size_t>(device_index);
    check(cuptiDeviceGetChipName(&chip), "cuptiDeviceGetChipName");
    chip_ = chip.pChipName;

    CUpti_Profiler_GetCounterAvailability_Params avail{CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE};
    avail.ctx = ctx;
    check(cuptiProfilerGetCounterAvailability(&avail), "cuptiProfilerGetCounterAvailability");
    availability_.resize(avail.counterAvailabilityImageSize);
    avail.pCounterAvailabilityImage = availability_.data();
    check(cuptiProfilerGetCounterAvailability(&avail), "cuptiProfilerGetCounterAvailability");

    CUpti_Profiler_Host_Initialize_Params host{CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE};
    host.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
    host.pChipName = chip_.c_str();
    host.pCounterAvailabilityImage = availability_.data();
    check(cuptiProfilerHostInitialize(&host), "cuptiProfilerHostInitialize");
    host_ = host.pHostObject;

    pick_supported(wanted);
    CUpti_Profiler_Host_ConfigAddMetrics_Params add{CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE};
    add.pHostObject = host_;
    add.ppMetricNames = names_.data();
    add.numMetrics = names_.size();
    check(cuptiProfilerHostConfigAddMetrics(&add), "cuptiProfilerHostConfigAddMetrics");
    CUpti_Profiler_Host_GetConfigImageSize_Params size{CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE};
    size.pHostObject = host_;
    check(cuptiProfilerHostGetConfigImageSize(&size), "cuptiProfilerHostGetConfigImageSize");
    config_.resize(size.configImageSize);
    CUpti_Profiler_Host_GetConfigImage_Params img{CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE};
    img.pHostObject = host_;
    img.configImageSize = config_.size();
    img.pConfigImage = config_.data();
    check(cuptiProfilerHostGetConfigImage(&img), "cuptiProfilerHostGetConfigImage");
    CUpti_Profiler_Host_GetNumOfPasses_Params passes{CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE};
    passes.configImageSize = config_.size();
    passes.pConfigImage = config_.data();
    check(cuptiProfilerHostGetNumOfPasses(&passes), "cuptiProfilerHostGetNumOfPasses");
    passes_ = passes.numOfPasses;

    CUpti_RangeProfiler_Enable_Params enable{CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE};
    enable.ctx = ctx;
    check(cuptiRangeProfilerEnable(&enable), "cuptiRangeProfilerEnable");
    object_ = enable.pRangeProfilerObject;
    CUpti_RangeProfiler_GetCounterDataSize_Params cds{CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE};
    cds.pRangeProfilerObject = object_;
    cds.pMetricNames = names_.data();
    cds.numMetrics = names_.size();
    cds.maxNumOfRanges = 1;
    cds.maxNumRangeTreeNodes = 1;
    check(cuptiRangeProfilerGetCounterDataSize(&cds), "cuptiRangeProfilerGetCounterDataSize");
    counter_data_.resize(cds.counterDataSize);
  }
  RangeProfiler(const RangeProfiler&) = delete;
  RangeProfiler& operator=(const RangeProfiler&) = delete;
  ~RangeProfiler() {
    if (object_) {
      CUpti_RangeProfiler_Disable_Params p{CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE};
      p.pRangeProfilerObject = object_;
      cuptiRangeProfilerDisable(&p);
    }
    if (host_) {
      CUpti_Profiler_Host_Deinitialize_Params p{CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE};
      p.pHostObject = host_;
      cuptiProfilerHostDeinitialize(&p);
    }
  }

  [[nodiscard]] CUcontext context() const { return ctx_; }
  [[nodiscard]] const std::string& chip() const { return chip_; }
  [[nodiscard]] std::size_t passes() const { return passes_; }
  [[nodiscard]] const std::vector<const char*>& metrics() const { return names_; }

  // Call right before the launch: the next kernel becomes the one range.
  void begin() {
    CUpti_RangeProfiler_CounterDataImage_Initialize_Params ci{CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE};
    ci.pRangeProfilerObject = object_;
    ci.counterDataSize = counter_data_.size();
    ci.pCounterData = counter_data_.data();
    check(cuptiRangeProfilerCounterDataImageInitialize(&ci), "cuptiRangeProfilerCounterDataImageInitialize");
    CUpti_RangeProfiler_SetConfig_Params sc{CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE};
    sc.pRangeProfilerObject = object_;
    sc.configSize = config_.size();
    sc.pConfig = config_.data();
    sc.counterDataImageSize = counter_data_.size();
    sc.pCounterDataImage = counter_data_.data();
    sc.range = CUPTI_AutoRange;
    sc.replayMode = CUPTI_KernelReplay;
    sc.maxRangesPerPass = 1;
    sc.numNestingLevels = 1;
    sc.minNestingLevel = 1;
    sc.passIndex = 0;
    sc.targetNestingLevel = 1;
    check(cuptiRangeProfilerSetConfig(&sc), "cuptiRangeProfilerSetConfig");
    CUpti_RangeProfiler_Start_Params st{CUpti_RangeProfiler_Start_Params_STRUCT_SIZE};
    st.pRangeProfilerObject = object_;
    check(cuptiRangeProfilerStart(&st), "cuptiRangeProfilerStart");
  }

  // Call right after the launch returns: the counter values, in the order of metrics().
  [[nodiscard]] std::vector<double> end() {
    CUpti_RangeProfiler_Stop_Params sp{CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE};
    sp.pRangeProfilerObject = object_;
    check(cuptiRangeProfilerStop(&sp), "cuptiRangeProfilerStop");
    if (!sp.isAllPassSubmitted) throw make_error("CUPTI", "cuptiRangeProfilerStop", "kernel replay left passes unsubmitted");
    CUpti_RangeProfiler_DecodeData_Params dd{CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE};
    dd.pRangeProfilerObject = object_;
    check(cuptiRangeProfilerDecodeData(&dd), "cuptiRangeProfilerDecodeData");
    CUpti_RangeProfiler_GetCounterDataInfo_Params info{CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE};
    info.pCounterDataImage = counter_data_.data();
    info.counterDataImageSize = counter_data_.size();
    check(cuptiRangeProfilerGetCounterDataInfo(&info), "cuptiRangeProfilerGetCounterDataInfo");
    if (info.numTotalRanges < 1) throw make_error("CUPTI", "decode", "no range recorded for the kernel");
    std::vector<double> values(names_.size());
    CUpti_Profiler_Host_EvaluateToGpuValues_Params ev{CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE};
    ev.pHostObject = host_;
    ev.pCounterDataImage = counter_data_.data();
    ev.counterDataImageSize = counter_data_.size();
    ev.rangeIndex = 0;
    ev.ppMetricNames = names_.data();
    ev.numMetrics = names_.size();
    ev.pMetricValues = values.data();
    check(cuptiProfilerHostEvaluateToGpuValues(&ev), "cuptiProfilerHostEvaluateToGpuValues");
    return values;
  }

 private:
  void pick_supported(const std::vector<std::string>& wanted) {
    std::vector<std::string> base;
    for (auto type : {CUPTI_METRIC_TYPE_COUNTER, CUPTI_METRIC_TYPE_RATIO, CUPTI_METRIC_TYPE_THROUGHPUT}) {
      CUpti_Profiler_Host_GetBaseMetrics_Params bm{CUpti_Profiler_Host_GetBaseMetrics_Params_STRUCT_SIZE};
      bm.pHostObject = host_;
      bm.metricType = type;
      check(cuptiProfilerHostGetBaseMetrics(&bm), "cuptiProfilerHostGetBaseMetrics");
      for (size_t i = 0; i < bm.numMetrics; ++i) base.emplace_back(bm.ppMetricNames[i]);
    }
    for (const auto& w : wanted) {
      const std::string stem = w.substr(0, w.find('.'));
      for (const auto& b : base)
        if (b == stem) {
          kept_.push_back(w);
          break;
        }
    }
    if (kept_.empty()) throw make_error("CUPTI", chip_, "none of the wanted counters exists on this chip");
    for (const auto& k : kept_) names_.push_back(k.c_str());
  }

  CUcontext ctx_;
  std::string chip_;
  std::vector<uint8_t> availability_, config_, counter_data_;
  CUpti_Profiler_Host_Object* host_ = nullptr;
  CUpti_RangeProfiler_Object* object_ = nullptr;
  std::vector<std::string> kept_;
  std::vector<const char*> names_;
  std::size_t passes_ = 0;
};

}  // namespace habitat::cupti
