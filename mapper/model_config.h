#pragma once
// Model configurations: HuggingFace config.json files as published (Llama, Qwen2, Qwen3, Mistral, Mixtral
// families), resolved into one validated struct. Unknown extra keys are normal in HF configs and ignored; a
// model_type outside the families the layer graph models, and the keys of those families that give a layer another
// shape than the graph's (dense layers among MoE ones, biases on the MLP), are refused naming them
// (docs/mapping.md "Model configs").
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace wafer::mapper {

struct ModelConfig {
  std::string name;        // shipped name ("llama-3.1-8b") or the file's stem
  std::string source;      // the file it was read from
  std::string model_type;  // "llama", "qwen2", "mistral", "mixtral", ...
  std::int64_t hidden = 0;         // hidden_size
  std::int64_t intermediate = 0;   // intermediate_size (per expert for MoE: moe_intermediate_size when given)
  std::int64_t heads = 0;          // num_attention_heads
  std::int64_t kv_heads = 0;       // num_key_value_heads (defaults to heads)
  std::int64_t head_dim = 0;       // head_dim, or hidden / heads
  std::int64_t layers = 0;         // num_hidden_layers
  std::int64_t vocab = 0;          // vocab_size
  bool tie_embeddings = false;     // tie_word_embeddings
  bool qkv_bias = false;           // Q/K/V projections carry a bias (Qwen2: implied by model_type)
  bool qk_norm = false;            // each query and key head RMS-normalised before RoPE (Qwen3: implied by model_type)
  std::int64_t experts = 0;        // num_local_experts / num_experts (0 = dense MLP)
  std::int64_t experts_per_tok = 0;  // num_experts_per_tok
  std::int64_t shared_intermediate = 0;  // shared_expert_intermediate_size: Qwen-MoE's shared expert (0: none), run
                                         // for every token beside the routed ones, scaled by a sigmoid gate
  std::string dtype = "bfloat16";  // torch_dtype
  std::int64_t max_position = 0;   // max_position_embeddings
  std::int64_t sliding_window = 0;  // sliding_window, when in force (0: every position is attended); the mapper
                                    // refuses a context beyond it, where attention would cover only the window
  double rms_norm_eps = 1e-5;
  double rope_theta = 10000.0;

  std::int64_t q_dim() const { return heads * head_dim; }
  std::int64_t kv_dim() const { return kv_heads * head_dim; }
  std::int64_t group() const { return heads / kv_heads; }  // query heads per KV head
  bool moe() const { return experts > 0; }
  // Parameters of one decoder layer (attention + norms + MLP or all experts + router).
  std::int64_t layer_parameters() const;
  // All parameters (embedding, layers, final norm, LM head unless tied).
  std::int64_t parameter_count() const;
  friend bool operator==(const ModelConfig&, const ModelConfig&) = default;  // every field (apps::PointCache keys)
};

// Resolves parsed JSON; `where` names the file in every error (missing field, wrong type, impossible
// head counts, zero layers ...).
ModelConfig parse_model_config(const nlohmann::json& j, std::string_view where);
// Reads one config.json. Malformed JSON and every validation failure are hw::InputError naming the file.
ModelConfig load_model_file(const std::filesystem::path& file);

// Names of the shipped configs (`--model llama-3.1-8b`), with their paths below configs/models.
struct ShippedModel {
  std::string_view name;
  std::string_view path;  // relative to the configs/models directory
};
const std::vector<ShippedModel>& shipped_models();

// Where the shipped configs are found, first hit wins:
//   1. $WAFER_EMU_CONFIGS (a directory holding <org>/<name>.json);
//   2. for each ancestor A of the running executable's directory: A/configs/models, then
//      A/<relative path from the build tree's root to the source tree's configs/models> (given by CMake,
//      so build/<preset>/apps/wafer-emu and build/<preset>/tests/mapper/mapper_tests both find it).
// Throws hw::InputError when none exists.
std::filesystem::path configs_dir();

// `--model`: a shipped name, or a path to a config.json (anything with '/' or ending in .json).
// Unknown names list the known ones.
ModelConfig load_model(std::string_view name_or_path);
// The file load_model reads for `name_or_path` (the path itself, or a shipped model's config file); empty for a name
// no shipped model has, or when the configs folder cannot be found.
std::filesystem::path model_file(std::string_view name_or_path);

}  // namespace wafer::mapper
