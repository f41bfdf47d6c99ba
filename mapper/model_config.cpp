#include "mapper/model_config.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>

#include "hw/error.h"
#include "hw/json_input.h"

#ifndef WAFER_CONFIGS_RELATIVE
#define WAFER_CONFIGS_RELATIVE "../../configs/models"
#endif

namespace wafer::mapper {

using hw::InputError;

std::int64_t ModelConfig::layer_parameters() const {
  const std::int64_t h = hidden;
  std::int64_t attn = h * q_dim() + 2 * h * kv_dim() + q_dim() * h;
  if (qkv_bias) attn += q_dim() + 2 * kv_dim();
  if (qk_norm) attn += 2 * head_dim;  // q_norm and k_norm: one weight per dim, shared by the heads
  std::int64_t mlp = 3 * h * intermediate;
  if (moe()) mlp = experts * mlp + h * experts;  // every expert + the router
  if (moe() && shared_intermediate > 0) mlp += 3 * h * shared_intermediate + h;  // the shared expert and its gate
  return attn + mlp + 2 * h;                       // + input and post-attention RMSNorm weights
}

std::int64_t ModelConfig::parameter_count() const {
  std::int64_t emb = vocab * hidden;
  return emb + layers * layer_parameters() + hidden + (tie_embeddings ? 0 : emb);
}

namespace {

constexpr std::int64_t kMaxDim = 1 << 20;          // hidden / intermediate / vocab sizes above this are refused
constexpr std::int64_t kMaxLayers = 4096;
constexpr std::int64_t kMaxPositions = std::int64_t(1) << 26;

std::int64_t get_int(const nlohmann::json& j, const char* key, std::string_view where, bool required,
                     std::int64_t fallback, std::int64_t lo, std::int64_t hi) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    if (required) throw InputError(fmt::format("{}: missing required field '{}'", where, key));
    return fallback;
  }
  if (!it->is_number_integer() && !(it->is_number_float() && it->get<double>() == double(std::int64_t(it->get<double>()))))
    throw InputError(fmt::format("{}: '{}' = {} must be a whole number", where, key, it->dump()));
  std::int64_t v = it->is_number_unsigned() ? std::int64_t(std::min<std::uint64_t>(it->get<std::uint64_t>(), std::uint64_t(1) << 62))
                                            : it->is_number_integer() ? it->get<std::int64_t>()
                                                                      : std::int64_t(it->get<double>());
  if (v < lo || v > hi) throw InputError(fmt::format("{}: '{}' = {} is outside [{}, {}]", where, key, v, lo, hi));
  return v;
}

double get_real(const nlohmann::json& j, const char* key, std::string_view where, double fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_number()) throw InputError(fmt::format("{}: '{}' = {} must be a number", where, key, it->dump()));
  double v = it->get<double>();
  if (!(v > 0)) throw InputError(fmt::format("{}: '{}' = {} must be positive", where, key, it->dump()));
  return v;
}

}  // namespace

ModelConfig parse_model_config(const nlohmann::json& j, std::string_view where) {
  if (!j.is_object()) throw InputError(fmt::format("{}: a model config must be a JSON object", where));
  ModelConfig m;
  m.source = std::string(where);
  if (auto it = j.find("model_type"); it != j.end() && !it->is_null()) {
    if (!it->is_string()) throw InputError(fmt::format("{}: 'model_type' = {} must be a string", where, it->dump()));
    m.model_type = it->get<std::string>();
    // The families whose decoder layer is the graph's (RMSNorm, grouped-query attention with RoPE, with Qwen3's
    // per-head q/k norms, a gated MLP of three projections or routed experts of one); a config without model_type
    // is read as one.
    static const char* const kModelled[] = {"llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe"};
    if (std::find(std::begin(kModelled), std::end(kModelled), m.model_type) == std::end(kModelled))
      throw InputError(fmt::format("{}: model_type '{}' is not modelled: the layer graph is that of {}", where,
                                   m.model_type, fmt::join(kModelled, ", ")));
  }
  m.hidden = get_int(j, "hidden_size", where, true, 0, 1, kMaxDim);
  m.intermediate = get_int(j, "intermediate_size", where, true, 0, 1, kMaxDim);
  m.heads = get_int(j, "num_attention_heads", where, true, 0, 1, 4096);
  m.kv_heads = get_int(j, "num_key_value_heads", where, false, m.heads, 1, 4096);
  m.layers = get_int(j, "num_hidden_layers", where, true, 0, 0, kMaxLayers);
  if (m.layers == 0) throw InputError(fmt::format("{}: 'num_hidden_layers' is 0: a model needs at least one layer", where));
  m.vocab = get_int(j, "vocab_size", where, true, 0, 1, kMaxDim);
  if (m.heads % m.kv_heads != 0)
    throw InputError(fmt::format("{}: num_attention_heads = {} is not divisible by num_key_value_heads = {}", where,
                                 m.heads, m.kv_heads));
  if (j.contains("head_dim") && !j["head_dim"].is_null()) {
    m.head_dim = get_int(j, "head_dim", where, false, 0, 1, 65536);
  } else {
    if (m.hidden % m.heads != 0)
      throw InputError(fmt::format("{}: hidden_size = {} is not divisible by num_attention_heads = {} (give head_dim)",
                                   where, m.hidden, m.heads));
    m.head_dim = m.hidden / m.heads;
  }
  if (auto it = j.find("tie_word_embeddings"); it != j.end() && !it->is_null()) {
    if (!it->is_boolean()) throw InputError(fmt::format("{}: 'tie_word_embeddings' must be true or false", where));
    m.tie_embeddings = it->get<bool>();
  }
  const std::string& t = m.model_type;
  const bool mixtral = t == "mixtral", qwen_moe = t == "qwen2_moe" || t == "qwen3_moe";
  const bool dense_family = t == "llama" || t == "mistral" || t == "qwen2" || t == "qwen3";
  const bool qwen = t.starts_with("qwen");
  // The class HuggingFace builds: one of the modelled families' (a config without model_type is read as the
  // graph's layer, but not when its class is another's).
  if (auto it = j.find("architectures"); it != j.end() && !it->is_null()) {
    static const char* const kClasses[] = {"LlamaForCausalLM",   "MistralForCausalLM",   "MixtralForCausalLM",
                                           "Qwen2ForCausalLM",   "Qwen2MoeForCausalLM",  "Qwen3ForCausalLM",
                                           "Qwen3MoeForCausalLM"};
    if (!it->is_array()) throw InputError(fmt::format("{}: 'architectures' must be a list of class names", where));
    for (const auto& a : *it) {
      if (!a.is_string()) throw InputError(fmt::format("{}: 'architectures' must be a list of class names", where));
      if (std::find(std::begin(kClasses), std::end(kClasses), a.get<std::string>()) == std::end(kClasses))
        throw InputError(fmt::format("{}: architectures names '{}', which is not modelled: the layer graph is that of {}",
                                     where, a.get<std::string>(), fmt::join(kClasses, ", ")));
    }
  }
  // Keys that announce a layer of another shape (latent attention, DeepSeek's experts, Gemma's soft-capping and
  // scaled queries, a parallel residual): refused whatever the model_type says.
  for (const char* key : {"kv_lora_rank", "q_lora_rank", "n_routed_experts", "n_shared_experts", "first_k_dense_replace",
                          "moe_layer_freq", "attn_logit_softcapping", "final_logit_softcapping", "query_pre_attn_scalar"})
    if (auto it = j.find(key); it != j.end() && !it->is_null())
      throw InputError(fmt::format("{}: '{}' = {} describes a layer the graph does not build (its layer is that of {})",
                                   where, key, it->dump(), "Llama, Mistral, Mixtral, Qwen2, Qwen2-MoE, Qwen3, Qwen3-MoE"));
  for (const char* key : {"use_parallel_residual", "parallel_attn", "new_decoder_architecture"})
    if (auto it = j.find(key); it != j.end() && it->is_boolean() && it->get<bool>())
      throw InputError(fmt::format("{}: '{}' = true: a parallel attention and MLP residual is not modelled", where, key));
  // Experts, as each family's HuggingFace class reads them: Mixtral num_local_experts of intermediate_size, Qwen-MoE
  // num_experts of moe_intermediate_size (Qwen2-MoE with a shared expert); the dense families read none. A family's
  // own keys are required (HuggingFace would fill in its defaults: 8, 60 or 128 experts); keys of another family are
  // refused rather than read as that family would read them. A config without model_type takes either spelling.
  auto require = [&](const char* key) {
    if (auto it = j.find(key); it == j.end() || it->is_null())
      throw InputError(fmt::format("{}: model_type '{}' needs '{}' (its experts' shape; HuggingFace would take its "
                                   "class's default)",
                                   where, t, key));
  };
  if (mixtral) require("num_local_experts");
  if (qwen_moe) require("num_experts"), require("moe_intermediate_size");
  if (t == "qwen2_moe") require("shared_expert_intermediate_size");
  {
    // (an MoE family has one expert at least: 0 was read as a dense layer, whatever its top-k said)
    const std::int64_t e1 = get_int(j, "num_local_experts", where, mixtral, 0, mixtral ? 1 : 0, 4096);
    const std::int64_t e2 = get_int(j, "num_experts", where, qwen_moe, 0, qwen_moe ? 1 : 0, 4096);
    if (dense_family && std::max(e1, e2) > 1)
      throw InputError(fmt::format("{}: '{}' = {}: model_type '{}' has no experts (Mixtral's layer is model_type "
                                   "mixtral, Qwen's qwen2_moe or qwen3_moe)",
                                   where, e1 > 1 ? "num_local_experts" : "num_experts", std::max(e1, e2), t));
    if (t.empty() && e1 > 0 && e2 > 0 && e1 != e2)
      throw InputError(fmt::format("{}: 'num_local_experts' = {} and 'num_experts' = {}: which is it?", where, e1, e2));
    m.experts = mixtral ? e1 : qwen_moe ? e2 : dense_family ? 0 : e1 ? e1 : e2;
  }
  if (m.experts > 0) {
    m.experts_per_tok = get_int(j, "num_experts_per_tok", where, true, 0, 1, m.experts);
    // Qwen-MoE gives each expert its own width (intermediate_size is then its dense layers' and shared expert's);
    // Mixtral's are intermediate_size wide.
    if (mixtral) {
      if (const std::int64_t w = get_int(j, "moe_intermediate_size", where, false, m.intermediate, 1, kMaxDim);
          w != m.intermediate)
        throw InputError(fmt::format("{}: 'moe_intermediate_size' = {}: Mixtral's experts are intermediate_size = {} "
                                     "wide (the key is Qwen-MoE's)",
                                     where, w, m.intermediate));
    } else {
      m.intermediate = get_int(j, "moe_intermediate_size", where, qwen_moe, m.intermediate, 1, kMaxDim);
    }
    // Qwen2-MoE's shared expert: a gated MLP of its own width beside the routed ones, for every token (Mixtral and
    // Qwen3-MoE have none).
    const bool shared_family = t == "qwen2_moe" || t.empty();
    m.shared_intermediate = get_int(j, "shared_expert_intermediate_size", where, t == "qwen2_moe", 0, 0, kMaxDim);
    if (!shared_family && m.shared_intermediate > 0)
      throw InputError(fmt::format("{}: 'shared_expert_intermediate_size' = {}: model_type '{}' has no shared expert",
                                   where, m.shared_intermediate, t));
    // What the graph does not model: every decoder layer is built alike, its MLP either dense or routed experts.
    if (const std::int64_t step = get_int(j, "decoder_sparse_step", where, false, 1, 1, kMaxLayers); step != 1)
      throw InputError(fmt::format("{}: 'decoder_sparse_step' = {}: dense layers between the MoE ones are not modelled "
                                   "(every layer is built alike)",
                                   where, step));
    if (auto it = j.find("mlp_only_layers"); it != j.end() && !it->is_null() && !(it->is_array() && it->empty()))
      throw InputError(fmt::format("{}: 'mlp_only_layers' = {}: dense layers among the MoE ones are not modelled (every "
                                   "layer is built alike)",
                                   where, it->dump()));
    // One routed expert, its top-k 1 (checked above) and its width read (a Qwen-MoE's moe_intermediate_size: it was
    // read as intermediate_size), is a dense MLP of that width; beside a shared expert it is not modelled.
    if (m.experts == 1) {
      if (m.shared_intermediate > 0)
        throw InputError(fmt::format("{}: one routed expert beside a shared expert of {} is not modelled", where,
                                     m.shared_intermediate));
      m.experts = m.experts_per_tok = 0;
    }
  }
  if (auto it = j.find("mlp_bias"); it != j.end() && !it->is_null()) {
    if (!it->is_boolean()) throw InputError(fmt::format("{}: 'mlp_bias' must be true or false", where));
    if (it->get<bool>())
      throw InputError(fmt::format("{}: 'mlp_bias' = true: biases on the MLP's projections are not modelled", where));
  }
  // A sliding window, as HuggingFace applies it: Mistral's sliding_window (4096 when the key is absent, none when
  // null); Qwen's only with use_sliding_window true (its default false), and then on the layers from
  // max_window_layers on (default 28): none when that is every layer; a layer_types list slides where it says
  // "sliding_attention". The graph applies one window to every layer, so a window in force on some layers only is
  // kept all the same: the mapper refuses a context beyond it, and within it every position is attended anyway.
  {
    std::int64_t w = 0;
    if (auto it = j.find("sliding_window"); it != j.end() && !it->is_null())
      w = get_int(j, "sliding_window", where, false, 0, 1, kMaxPositions);
    else if (it == j.end() && t == "mistral")
      w = 4096;  // (MistralConfig's default)
    bool in_force = w > 0;
    const auto use = j.find("use_sliding_window");
    if (use != j.end() && !use->is_null()) {
      if (!use->is_boolean()) throw InputError(fmt::format("{}: 'use_sliding_window' must be true or false", where));
      in_force = in_force && use->get<bool>();
    } else if (qwen) {
      in_force = false;
    }
    if (in_force && qwen && get_int(j, "max_window_layers", where, false, 28, 0, kMaxLayers) >= m.layers) in_force = false;
    // (a list HuggingFace would refuse is refused whether or not a window is in force: entries of another kind, or
    // a list not one entry a layer, turned the window off without a word)
    if (auto it = j.find("layer_types"); it != j.end() && !it->is_null()) {
      if (!it->is_array()) throw InputError(fmt::format("{}: 'layer_types' must be a list", where));
      if (std::int64_t(it->size()) != m.layers)
        throw InputError(fmt::format("{}: 'layer_types' has {} entries for num_hidden_layers = {}", where, it->size(),
                                     m.layers));
      for (const auto& v : *it)
        if (v != "full_attention" && v != "sliding_attention")
          throw InputError(fmt::format("{}: 'layer_types' holds {}: the layers modelled are \"full_attention\" and "
                                       "\"sliding_attention\"",
                                       where, v.dump()));
      in_force = in_force && std::any_of(it->begin(), it->end(), [](const auto& v) { return v == "sliding_attention"; });
    }
    m.sliding_window = in_force ? w : 0;
  }
  if (auto it = j.find("torch_dtype"); it != j.end() && !it->is_null()) {
    if (!it->is_string()) throw InputError(fmt::format("{}: 'torch_dtype' = {} must be a string", where, it->dump()));
    // (the checkpoint's type, a torch floating-point one; the emulated weights are weight_bits wide whatever it is)
    static const char* const kTypes[] = {"bfloat16",       "float16",     "float32",         "float64",
                                         "float8_e4m3fn",  "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz"};
    m.dtype = it->get<std::string>();
    if (std::find(std::begin(kTypes), std::end(kTypes), m.dtype) == std::end(kTypes))
      throw InputError(fmt::format("{}: 'torch_dtype' = {}: no torch floating-point type (bfloat16, float16, float32, "
                                   "float64, float8_*)",
                                   where, it->dump()));
  }
  // (absent: no limit known; given, at least one position: 0 had turned the limit off)
  m.max_position = get_int(j, "max_position_embeddings", where, false, 0, 1, kMaxPositions);
  m.rms_norm_eps = get_real(j, "rms_norm_eps", where, 1e-5);
  m.rope_theta = get_real(j, "rope_theta", where, 10000.0);
  // Absurd sizes are refused before anything sizes buffers from them (and before int64 products overflow).
  {
    const double h = double(m.hidden), e = double(std::max<std::int64_t>(m.experts, 1));
    const double per_layer = 2 * h * double(m.heads * m.head_dim) + 2 * h * double(m.kv_heads * m.head_dim) +
                             3 * h * double(m.intermediate) * e;
    const double total = per_layer * double(m.layers) + 2 * double(m.vocab) * h;
    if (total > 1e14)
      throw InputError(fmt::format("{}: the model would have {:.3g} parameters; refusing sizes above 1e14", where, total));
  }
  // Qwen2 projections carry a Q/K/V bias that no key announces; Qwen3 normalises each query and key head instead
  // (q_norm, k_norm), also unannounced.
  m.qkv_bias = m.model_type == "qwen2" || m.model_type == "qwen2_moe";
  m.qk_norm = m.model_type == "qwen3" || m.model_type == "qwen3_moe";
  // attention_bias: Llama's and Qwen3's q, k, v and o projections (the o bias is not modelled: refused); Mistral,
  // Mixtral and Qwen2 do not read the key (their biases are fixed by the family).
  if (auto it = j.find("attention_bias"); it != j.end() && !it->is_null()) {
    if (!it->is_boolean()) throw InputError(fmt::format("{}: 'attention_bias' must be true or false", where));
    if (it->get<bool>() && (t.empty() || t == "llama" || t == "qwen3" || t == "qwen3_moe"))
      throw InputError(fmt::format("{}: 'attention_bias' = true: the biases of the attention's projections (q, k, v and "
                                   "o) are not modelled for model_type '{}'",
                                   where, t.empty() ? "llama" : t));
  }
  return m;
}

ModelConfig load_model_file(const std::filesystem::path& file) {
  std::string text = hw::read_input_file(file, "model config");
  const nlohmann::json j = hw::parse_input_json<nlohmann::json>(text, file.string());
  ModelConfig m = parse_model_config(j, file.string());
  m.name = file.stem().string();
  if (m.name == "config") m.name = file.parent_path().filename().string();
  return m;
}

const std::vector<ShippedModel>& shipped_models() {
  static const std::vector<ShippedModel> table = {
      {"llama-3.2-1b", "meta-llama/Llama-3.2-1B.json"},
      {"llama-3.1-8b", "meta-llama/Llama-3.1-8B.json"},
      {"llama-3.1-70b", "meta-llama/Llama-3.1-70B.json"},
      {"llama-3.1-405b", "meta-llama/Llama-3.1-405B.json"},
      {"qwen2.5-7b", "Qwen/Qwen2.5-7B.json"},
      {"qwen2.5-72b", "Qwen/Qwen2.5-72B.json"},
      {"qwen3-30b-a3b", "Qwen/Qwen3-30B-A3B.json"},
      {"mixtral-8x7b", "mistralai/Mixtral-8x7B-v0.1.json"},
      {"tinyllama-1.1b", "TinyLlama/TinyLlama-1.1B-Chat-v1.0.json"},
      {"tiny-llama", "test/tiny-llama.json"},
      {"tiny-moe", "test/tiny-moe.json"},
      {"tiny-qwen", "test/tiny-qwen.json"},
      {"small-llama", "test/small-llama.json"},
  };
  return table;
}

std::filesystem::path configs_dir() {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (const char* env = std::getenv("WAFER_EMU_CONFIGS"); env && *env) {
    if (fs::is_directory(env, ec)) return fs::path(env);
    throw InputError(fmt::format("WAFER_EMU_CONFIGS = '{}' is not a directory", env));
  }
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    for (fs::path dir = exe.parent_path(); !dir.empty(); dir = dir.parent_path()) {
      for (const fs::path& cand : {dir / "configs" / "models", dir / WAFER_CONFIGS_RELATIVE}) {
        if (fs::is_directory(cand, ec) && fs::exists(cand / "meta-llama", ec)) return cand.lexically_normal();
      }
      if (dir == dir.root_path()) break;
    }
  }
  throw InputError(
      "cannot find the shipped model configs (configs/models): set WAFER_EMU_CONFIGS to that directory, or pass "
      "--model path/to/config.json");
}

std::filesystem::path model_file(std::string_view arg) {
  if (hw::names_file(arg)) return std::string(arg);
  for (const ShippedModel& s : shipped_models())
    if (s.name == arg) try {
        return configs_dir() / s.path;
      } catch (const InputError&) {
        return {};
      }
  return {};
}

ModelConfig load_model(std::string_view arg) {
  if (hw::names_file(arg)) return load_model_file(std::string(arg));
  for (const ShippedModel& s : shipped_models()) {
    if (s.name == arg) {
      ModelConfig m = load_model_file(configs_dir() / s.path);
      m.name = std::string(s.name);
      return m;
    }
  }
  std::string known;
  for (const ShippedModel& s : shipped_models()) known += (known.empty() ? "" : ", ") + std::string(s.name);
  throw InputError(fmt::format("unknown model '{}' (shipped: {}; or give a path to a config.json)", arg, known));
}

}  // namespace wafer::mapper
