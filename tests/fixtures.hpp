#pragma once
// Paths to the recorded fixtures and a scratch folder for generated bad inputs.
#include <filesystem>
#include <fstream>
#include <string>

namespace habitat::test {

inline std::string fixture(const std::string& gpu, const std::string& workload, const std::string& set = "kineto") {
  return std::string(HABITAT_FIXTURES) + "/" + set + "/" + gpu + "/" + workload + ".json.gz";
}

inline const char* const workloads[] = {"dcgan_bf16_b256", "dcgan_fp32_b128", "decoder_bf16_b8",      "decoder_fp32_b4",
                                        "dlrm_fp32_b2048", "dlrm_fp32_b8192", "encoder_bf16_b32",     "encoder_fp32_b16",
                                        "lstm_bf16_b128",  "lstm_fp32_b64",   "mobilenetv2_fp32_b64", "resnet50_bf16_b64",
                                        "resnet50_fp32_b32"};

// Recorded after the model was frozen (fixtures/heldout): evidence that it is not fitted to the above.
inline const char* const heldout_workloads[] = {"vgg16_fp32_b32", "vit_b16_bf16_b32", "efficientnet_b0_fp32_b64",
                                                "convnext_tiny_bf16_b64", "gru_fp32_b32"};

inline std::string write_temp(const std::string& name, const std::string& content) {
  std::filesystem::create_directories(HABITAT_TEST_TMP);
  const std::string path = std::string(HABITAT_TEST_TMP) + "/" + name;
  std::ofstream(path, std::ios::binary) << content;
  return path;
}

}  // namespace habitat::test
