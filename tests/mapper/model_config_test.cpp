#include "mapper/model_config.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <set>

#include "hw/error.h"
#include "mapper/graph.h"

using namespace wafer::mapper;
using wafer::hw::InputError;

namespace {
std::string data(const char* f) { return std::string(MAPPER_TEST_DATA) + "/" + f; }

// The InputError message of f(), or "" when it throws none.
template <class F>
std::string error_in(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}
// The error message of loading `file`, or "" when it loads.
std::string error_of(const std::string& file) {
  return error_in([&] { load_model(file); });
}
bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }
}  // namespace

TEST(ModelConfig, ShippedConfigsCarryTheReferenceValues) {
  ModelConfig m = load_model("llama-3.1-8b");
  EXPECT_EQ(m.name, "llama-3.1-8b");
  EXPECT_EQ(m.hidden, 4096);
  EXPECT_EQ(m.intermediate, 14336);
  EXPECT_EQ(m.heads, 32);
  EXPECT_EQ(m.kv_heads, 8);
  EXPECT_EQ(m.head_dim, 128);
  EXPECT_EQ(m.layers, 32);
  EXPECT_EQ(m.vocab, 128256);
  EXPECT_EQ(m.max_position, 131072);
  EXPECT_DOUBLE_EQ(m.rope_theta, 500000.0);
  EXPECT_DOUBLE_EQ(m.rms_norm_eps, 1e-5);
  EXPECT_FALSE(m.tie_embeddings);
  EXPECT_FALSE(m.qkv_bias);
  EXPECT_EQ(m.dtype, "bfloat16");

  ModelConfig one = load_model("llama-3.2-1b");
  EXPECT_EQ(one.head_dim, 64);
  EXPECT_TRUE(one.tie_embeddings);
  EXPECT_EQ(one.layers, 16);

  ModelConfig q = load_model("qwen2.5-7b");
  EXPECT_TRUE(q.qkv_bias);  // implied by model_type qwen2, no key announces it
  EXPECT_EQ(q.hidden, 3584);
  EXPECT_EQ(q.kv_heads, 4);
  EXPECT_EQ(q.head_dim, 128);
  EXPECT_DOUBLE_EQ(q.rms_norm_eps, 1e-6);
  EXPECT_EQ(load_model("qwen2.5-72b").max_position, 32768);

  ModelConfig x = load_model("mixtral-8x7b");
  EXPECT_EQ(x.experts, 8);
  EXPECT_EQ(x.experts_per_tok, 2);
  EXPECT_EQ(x.vocab, 32000);
  EXPECT_EQ(load_model("tinyllama-1.1b").layers, 22);
  EXPECT_EQ(load_model("llama-3.1-405b").heads, 128);
}

TEST(ModelConfig, EveryShippedNameLoads) {
  std::set<std::string> names;
  for (const auto& s : shipped_models()) {
    names.insert(std::string(s.name));
    EXPECT_NO_THROW(load_model(s.name)) << s.name;
  }
  for (const char* n : {"llama-3.2-1b", "llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b", "qwen2.5-7b",
                        "qwen2.5-72b", "qwen3-30b-a3b", "mixtral-8x7b", "tinyllama-1.1b", "tiny-llama", "tiny-moe"})
    EXPECT_TRUE(names.count(n)) << n;
}

TEST(ModelConfig, ParameterCountsMatchThePublishedModels) {
  // Published totals: Llama-3.1-8B 8.03 B, 70B 70.6 B, 405B 405.9 B, Mixtral-8x7B 46.7 B, Llama-3.2-1B 1.24 B,
  // Qwen2.5-7B 7.62 B, Qwen2.5-72B 72.7 B, TinyLlama 1.1 B.
  EXPECT_EQ(load_model("llama-3.1-8b").parameter_count(), 8'030'261'248);
  EXPECT_EQ(load_model("llama-3.1-70b").parameter_count(), 70'553'706'496);
  EXPECT_EQ(load_model("mixtral-8x7b").parameter_count(), 46'702'792'704);
  EXPECT_EQ(load_model("llama-3.2-1b").parameter_count(), 1'235'814'400);
  EXPECT_EQ(load_model("qwen2.5-7b").parameter_count(), 7'615'616'512);
  EXPECT_NEAR(double(load_model("qwen2.5-72b").parameter_count()), 72.7e9, 0.1e9);
  EXPECT_NEAR(double(load_model("llama-3.1-405b").parameter_count()), 405.9e9, 0.2e9);
  EXPECT_NEAR(double(load_model("tinyllama-1.1b").parameter_count()), 1.1e9, 0.01e9);
  // Qwen3-30B-A3B: 128 experts of 768 (8 a token), q/k norms, no shared expert; its published 30.5 B.
  const ModelConfig q3 = load_model("qwen3-30b-a3b");
  EXPECT_EQ(q3.parameter_count(), 30'532'122'624);
  EXPECT_TRUE(q3.qk_norm && q3.experts == 128 && q3.intermediate == 768 && q3.shared_intermediate == 0);
  EXPECT_EQ(q3.sliding_window, 0);
  // The layer graph holds the same weights.
  for (const char* n : {"llama-3.1-8b", "mixtral-8x7b", "llama-3.2-1b", "qwen2.5-7b", "qwen3-30b-a3b"}) {
    ModelConfig m = load_model(n);
    EXPECT_EQ(build_graph(m, 1, 16).parameters(), m.parameter_count()) << n;
  }
}

TEST(ModelConfig, ExtraKeysAreIgnoredAndDefaultsApply) {
  ModelConfig m = load_model(data("extra_keys.json"));
  EXPECT_EQ(m.name, "extra_keys");
  EXPECT_EQ(m.head_dim, 16);
  EXPECT_EQ(m.experts, 0);
  ModelConfig q = load_model(data("qwen_moe.json"));
  EXPECT_EQ(q.experts, 8);  // Qwen-MoE spells it num_experts
  EXPECT_TRUE(q.qkv_bias);
}

TEST(ModelConfig, BadInputIsRefusedWithTheFileAndTheField) {
  std::string e = error_of(data("malformed.json"));
  EXPECT_TRUE(has(e, "malformed.json") && has(e, "malformed JSON")) << e;
  e = error_of(data("missing_hidden.json"));
  EXPECT_TRUE(has(e, "missing_hidden.json") && has(e, "hidden_size")) << e;
  e = error_of(data("bad_heads.json"));
  EXPECT_TRUE(has(e, "num_attention_heads = 6") && has(e, "num_key_value_heads = 4")) << e;
  e = error_of(data("zero_layers.json"));
  EXPECT_TRUE(has(e, "num_hidden_layers") && has(e, "0")) << e;
  e = error_of(data("wrong_type.json"));
  EXPECT_TRUE(has(e, "hidden_size") && has(e, "whole number")) << e;
  e = error_of(data("moe_missing_topk.json"));
  EXPECT_TRUE(has(e, "num_experts_per_tok")) << e;
  e = error_of(data("huge.json"));
  EXPECT_TRUE(has(e, "hidden_size") && has(e, "outside")) << e;
  e = error_of(data("does_not_exist.json"));
  EXPECT_TRUE(has(e, "does_not_exist.json") && has(e, "cannot open")) << e;
  e = error_of("llama-9000");
  EXPECT_TRUE(has(e, "llama-9000") && has(e, "llama-3.1-8b")) << e;
}

namespace {
// A tiny Llama-shaped config with `extra` merged in, parsed (as a config.json would be).
ModelConfig parsed(const nlohmann::json& extra) {
  nlohmann::json j = {{"hidden_size", 64}, {"intermediate_size", 128}, {"num_attention_heads", 4},
                      {"num_key_value_heads", 2}, {"num_hidden_layers", 2}, {"vocab_size", 256}};
  if (extra.is_object()) j.update(extra);  // ({} is null to nlohmann)
  return parse_model_config(j, "cfg.json");
}
std::string parse_error(const nlohmann::json& extra) {
  return error_in([&] { parsed(extra); });
}
const nlohmann::json kMoe = {{"model_type", "qwen2_moe"},      {"num_experts", 8},
                             {"num_experts_per_tok", 2},         {"moe_intermediate_size", 128},
                             {"shared_expert_intermediate_size", 0}};
nlohmann::json moe(const nlohmann::json& extra) {
  nlohmann::json j = kMoe;
  if (extra.is_object()) j.update(extra);  // ({} is null to nlohmann)
  return j;
}
}  // namespace

// max_position_embeddings absent is no limit known; given, it is at least one position (0 turned the limit off).
TEST(ModelConfig, APositionLimitIsAtLeastOnePosition) {
  EXPECT_EQ(parsed({}).max_position, 0);
  EXPECT_EQ(parsed({{"max_position_embeddings", 1}}).max_position, 1);
  const std::string e = parse_error({{"max_position_embeddings", 0}});
  EXPECT_TRUE(has(e, "max_position_embeddings") && has(e, "outside [1,")) << e;
}

TEST(ModelConfig, AFamilyOutsideTheGraphIsRefusedNamingIt) {
  for (const char* t : {"llama", "mistral", "qwen2", "qwen3"}) EXPECT_EQ(parse_error({{"model_type", t}}), "") << t;
  EXPECT_EQ(parse_error({{"model_type", "mixtral"}, {"num_local_experts", 4}, {"num_experts_per_tok", 2}}), "");
  EXPECT_EQ(parse_error(moe({})), "");
  EXPECT_EQ(parse_error(moe({{"model_type", "qwen3_moe"}, {"shared_expert_intermediate_size", nullptr}})), "");
  EXPECT_EQ(parsed({}).model_type, "");  // no model_type: read as the graph's layer
  for (const char* t : {"gpt_neox", "deepseek_v3", "gemma2", "falcon"}) {
    const std::string e = parse_error({{"model_type", t}});
    EXPECT_TRUE(has(e, "cfg.json") && has(e, fmt::format("model_type '{}' is not modelled", t)) &&
                has(e, "llama, mistral, mixtral, qwen2, qwen2_moe, qwen3, qwen3_moe"))
        << e;
  }
  EXPECT_TRUE(has(parse_error({{"model_type", 3}}), "'model_type' = 3 must be a string"));
}

TEST(ModelConfig, Qwen3NormalisesItsQueryAndKeyHeads) {
  // Qwen3-8B's shape (hidden 4096, 36 layers, 32 query and 8 KV heads of 128, MLP 12288, vocab 151936, untied): its
  // published 8.19 B parameters, the q_norm and k_norm weights (128 each a layer) included, and the graph holds them.
  const nlohmann::json q3 = {{"model_type", "qwen3"},         {"hidden_size", 4096},       {"intermediate_size", 12288},
                             {"num_attention_heads", 32},     {"num_key_value_heads", 8},  {"head_dim", 128},
                             {"num_hidden_layers", 36},       {"vocab_size", 151936},      {"tie_word_embeddings", false}};
  const ModelConfig m = parse_model_config(q3, "qwen3-8b.json");
  EXPECT_TRUE(m.qk_norm);
  EXPECT_FALSE(m.qkv_bias);
  EXPECT_EQ(m.parameter_count(), 8'190'735'360);
  EXPECT_EQ(build_graph(m, 1, 16).parameters(), m.parameter_count());
  nlohmann::json llama = q3;
  llama["model_type"] = "llama";
  EXPECT_EQ(m.parameter_count() - parse_model_config(llama, "x.json").parameter_count(), 36 * 2 * 128);
  EXPECT_TRUE(parsed(moe({{"model_type", "qwen3_moe"}, {"moe_intermediate_size", 32}})).qk_norm);
  EXPECT_FALSE(parsed({{"model_type", "qwen2"}}).qk_norm);
  EXPECT_FALSE(parsed({}).qk_norm);
}

TEST(ModelConfig, QwenMoeExpertsTakeTheirOwnWidth) {
  // moe_intermediate_size is each expert's width; intermediate_size then belongs to layers the graph does not build.
  ModelConfig q = parsed(moe({{"moe_intermediate_size", 32}}));
  EXPECT_EQ(q.intermediate, 32);
  EXPECT_EQ(q.layer_parameters() - parsed(moe({{"moe_intermediate_size", 32}, {"intermediate_size", 999}})).layer_parameters(), 0);
  EXPECT_EQ(parsed({{"moe_intermediate_size", 32}}).intermediate, 128);  // a dense model: no experts to size
  EXPECT_TRUE(has(parse_error(moe({{"moe_intermediate_size", 0}})), "'moe_intermediate_size' = 0 is outside"));
}

TEST(ModelConfig, OneExpertIsADenseMlpOfItsOwnWidthAndItsTopKIsChecked) {
  // A Qwen-MoE of one expert: a dense MLP of moe_intermediate_size (it was read as intermediate_size's), its top-k
  // 1 (8 was never checked); beside a shared expert, not modelled.
  const nlohmann::json q3 = {{"model_type", "qwen3_moe"}, {"num_experts", 1}, {"num_experts_per_tok", 1},
                             {"moe_intermediate_size", 32}, {"intermediate_size", 96}};
  const ModelConfig one = parsed(q3);
  EXPECT_EQ(one.experts, 0);
  EXPECT_EQ(one.intermediate, 32);
  EXPECT_EQ(one.layer_parameters(), parsed({{"model_type", "qwen3"}, {"intermediate_size", 32}}).layer_parameters());
  auto with = [](nlohmann::json j, const nlohmann::json& extra) { return j.update(extra), j; };
  std::string e = parse_error(with(q3, {{"num_experts_per_tok", 8}}));
  EXPECT_TRUE(has(e, "'num_experts_per_tok' = 8 is outside [1, 1]")) << e;
  e = parse_error(moe({{"num_experts", 1}, {"num_experts_per_tok", 1}, {"shared_expert_intermediate_size", 64}}));
  EXPECT_TRUE(has(e, "one routed expert beside a shared expert of 64 is not modelled")) << e;
  // Mixtral: one expert at least (0 was a dense layer whatever its top-k), its top-k a count within the experts.
  const nlohmann::json mixtral = {{"model_type", "mixtral"}, {"num_local_experts", 1}, {"num_experts_per_tok", 1}};
  EXPECT_EQ(parsed(mixtral).experts, 0);
  EXPECT_EQ(parsed(mixtral).intermediate, 128);
  e = parse_error(with(mixtral, {{"num_local_experts", 0}, {"num_experts_per_tok", -5}}));
  EXPECT_TRUE(has(e, "'num_local_experts' = 0 is outside [1, 4096]")) << e;
  e = parse_error(with(mixtral, {{"num_experts_per_tok", "two"}}));
  EXPECT_TRUE(has(e, "num_experts_per_tok")) << e;
  e = parse_error(with(mixtral, {{"num_experts_per_tok", 2}}));
  EXPECT_TRUE(has(e, "'num_experts_per_tok' = 2 is outside [1, 1]")) << e;
  e = parse_error(with(q3, {{"num_experts", 0}}));
  EXPECT_TRUE(has(e, "'num_experts' = 0 is outside [1, 4096]")) << e;
}

TEST(ModelConfig, EachFamilyReadsItsOwnKeys) {
  // A family's expert keys are required (HuggingFace would fill in its class's defaults: 8, 60 or 128 experts, where
  // a dense layer was read before), and another family's are refused rather than read as that family reads them.
  const nlohmann::json mixtral = {{"model_type", "mixtral"}, {"num_local_experts", 4}, {"num_experts_per_tok", 2}};
  auto with = [](nlohmann::json j, const nlohmann::json& extra) { return j.update(extra), j; };
  auto without = [](nlohmann::json j, const char* key) { return j.erase(key), j; };
  EXPECT_EQ(parsed(mixtral).experts, 4);
  EXPECT_EQ(parsed(mixtral).intermediate, 128);  // Mixtral's experts: intermediate_size
  std::string e = parse_error(without(mixtral, "num_local_experts"));
  EXPECT_TRUE(has(e, "cfg.json: model_type 'mixtral' needs 'num_local_experts'")) << e;
  e = parse_error(with(mixtral, {{"moe_intermediate_size", 32}}));
  EXPECT_TRUE(has(e, "'moe_intermediate_size' = 32: Mixtral's experts are intermediate_size = 128 wide")) << e;
  EXPECT_EQ(parse_error(with(mixtral, {{"moe_intermediate_size", 128}})), "");
  e = parse_error(with(mixtral, {{"shared_expert_intermediate_size", 64}}));
  EXPECT_TRUE(has(e, "'shared_expert_intermediate_size' = 64: model_type 'mixtral' has no shared expert")) << e;
  for (const char* key : {"num_experts", "moe_intermediate_size", "shared_expert_intermediate_size"}) {
    e = parse_error(without(kMoe, key));
    EXPECT_TRUE(has(e, fmt::format("model_type 'qwen2_moe' needs '{}'", key))) << e;
  }
  const nlohmann::json q3 = with(without(kMoe, "shared_expert_intermediate_size"), {{"model_type", "qwen3_moe"}});
  EXPECT_EQ(parse_error(q3), "");
  EXPECT_TRUE(has(parse_error(without(q3, "moe_intermediate_size")), "model_type 'qwen3_moe' needs 'moe_intermediate_size'"));
  e = parse_error(with(q3, {{"shared_expert_intermediate_size", 64}}));
  EXPECT_TRUE(has(e, "model_type 'qwen3_moe' has no shared expert")) << e;
  // The dense families have no experts: a count of one is a dense MLP, more is refused.
  EXPECT_EQ(parsed({{"model_type", "llama"}, {"num_local_experts", 1}}).experts, 0);
  e = parse_error({{"model_type", "llama"}, {"num_local_experts", 8}, {"num_experts_per_tok", 2}});
  EXPECT_TRUE(has(e, "'num_local_experts' = 8: model_type 'llama' has no experts")) << e;
  e = parse_error({{"model_type", "qwen2"}, {"num_experts", 8}});
  EXPECT_TRUE(has(e, "'num_experts' = 8: model_type 'qwen2' has no experts")) << e;
  // Without model_type, either spelling (the graph's layer).
  EXPECT_EQ(parsed({{"num_local_experts", 4}, {"num_experts_per_tok", 2}}).experts, 4);
  EXPECT_EQ(parsed({{"num_experts", 4}, {"num_experts_per_tok", 2}, {"moe_intermediate_size", 32}}).intermediate, 32);
  EXPECT_EQ(parsed({{"num_local_experts", 4}, {"num_experts", 4}, {"num_experts_per_tok", 2}}).experts, 4);
  e = parse_error({{"num_local_experts", 4}, {"num_experts", 8}, {"num_experts_per_tok", 2}});
  EXPECT_TRUE(has(e, "'num_local_experts' = 4 and 'num_experts' = 8: which is it?")) << e;
}

TEST(ModelConfig, AnotherLayersClassOrKeysAreRefused) {
  for (const char* c : {"LlamaForCausalLM", "MistralForCausalLM", "MixtralForCausalLM", "Qwen2ForCausalLM",
                        "Qwen2MoeForCausalLM", "Qwen3ForCausalLM", "Qwen3MoeForCausalLM"})
    EXPECT_EQ(parse_error({{"architectures", {c}}}), "") << c;
  // (a config without model_type is read as the graph's layer, but not when its class is another's)
  for (const char* c : {"DeepseekV3ForCausalLM", "Gemma2ForCausalLM", "GPTNeoXForCausalLM", "LlamaForSequenceClassification"}) {
    const std::string e = parse_error({{"architectures", {c}}});
    EXPECT_TRUE(has(e, fmt::format("cfg.json: architectures names '{}', which is not modelled", c))) << e;
  }
  EXPECT_TRUE(has(parse_error({{"architectures", "LlamaForCausalLM"}}), "'architectures' must be a list of class names"));
  for (const char* key : {"kv_lora_rank", "q_lora_rank", "n_routed_experts", "n_shared_experts", "first_k_dense_replace",
                          "moe_layer_freq", "attn_logit_softcapping", "final_logit_softcapping", "query_pre_attn_scalar"}) {
    EXPECT_EQ(parse_error({{key, nullptr}}), "") << key;
    const std::string e = parse_error({{key, 16}});
    EXPECT_TRUE(has(e, fmt::format("'{}' = 16 describes a layer the graph does not build", key))) << e;
  }
  for (const char* key : {"use_parallel_residual", "parallel_attn", "new_decoder_architecture"}) {
    EXPECT_EQ(parse_error({{key, false}}), "") << key;
    EXPECT_TRUE(has(parse_error({{key, true}}), "a parallel attention and MLP residual is not modelled")) << key;
  }
  // attention_bias: Llama's and Qwen3's put a bias on q, k, v and o (not modelled); Mistral, Mixtral and Qwen2 do
  // not read the key (Qwen2's q, k, v biases come with its family).
  for (const char* t : {"llama", "qwen3"}) {
    EXPECT_EQ(parse_error({{"model_type", t}, {"attention_bias", false}}), "") << t;
    const std::string e = parse_error({{"model_type", t}, {"attention_bias", true}});
    EXPECT_TRUE(has(e, fmt::format("'attention_bias' = true: the biases of the attention's projections (q, k, v and o) "
                                   "are not modelled for model_type '{}'", t))) << e;
  }
  EXPECT_FALSE(parsed({{"model_type", "mistral"}, {"attention_bias", true}}).qkv_bias);
  EXPECT_TRUE(parsed({{"model_type", "qwen2"}, {"attention_bias", false}}).qkv_bias);
  EXPECT_TRUE(has(parse_error({{"attention_bias", "no"}}), "'attention_bias' must be true or false"));
}

TEST(ModelConfig, QwenMoesSharedExpertIsHeld) {
  // Qwen1.5-MoE-A2.7B's published config: 60 experts of 1,408, a shared expert of 5,632 and its gate; the published
  // 14.3 B parameters (the graph holds the same).
  const nlohmann::json a27 = {{"model_type", "qwen2_moe"},       {"hidden_size", 2048},          {"intermediate_size", 5632},
                              {"moe_intermediate_size", 1408},    {"num_attention_heads", 16},    {"num_key_value_heads", 16},
                              {"num_hidden_layers", 24},          {"vocab_size", 151936},         {"num_experts", 60},
                              {"num_experts_per_tok", 4},         {"shared_expert_intermediate_size", 5632},
                              {"decoder_sparse_step", 1},         {"tie_word_embeddings", false}};
  const ModelConfig m = parse_model_config(a27, "Qwen1.5-MoE-A2.7B.json");
  EXPECT_EQ(m.intermediate, 1408);
  EXPECT_EQ(m.shared_intermediate, 5632);
  EXPECT_EQ(m.parameter_count(), 14'315'784'192);
  EXPECT_EQ(build_graph(m, 1, 16).parameters(), m.parameter_count());
  nlohmann::json none = a27;
  none["shared_expert_intermediate_size"] = 0;
  EXPECT_EQ(m.layer_parameters() - parse_model_config(none, "x.json").layer_parameters(), 3 * 2048 * 5632 + 2048);
  EXPECT_EQ(parsed({{"shared_expert_intermediate_size", 64}}).shared_intermediate, 0);  // (a dense model: not read)
  EXPECT_EQ(parsed({{"shared_expert_intermediate_size", 64}}).layer_parameters(), parsed({}).layer_parameters());
}

TEST(ModelConfig, AnMoeLayerOfAnotherShapeIsRefusedNamingTheKey) {
  // Both sides: the value the graph models loads, the next one is refused.
  EXPECT_EQ(parse_error(moe({{"decoder_sparse_step", 1}})), "");
  std::string e = parse_error(moe({{"decoder_sparse_step", 2}}));
  EXPECT_TRUE(has(e, "'decoder_sparse_step' = 2: dense layers between the MoE ones are not modelled")) << e;
  EXPECT_EQ(parse_error(moe({{"mlp_only_layers", nlohmann::json::array()}})), "");
  e = parse_error(moe({{"mlp_only_layers", {0}}}));
  EXPECT_TRUE(has(e, "'mlp_only_layers' = [0]: dense layers among the MoE ones are not modelled")) << e;
  // (a dense model: those keys say nothing about its layers)
  EXPECT_EQ(parse_error({{"decoder_sparse_step", 2}, {"mlp_only_layers", {0}}}), "");
  EXPECT_EQ(parse_error({{"mlp_bias", false}}), "");
  EXPECT_TRUE(has(parse_error({{"mlp_bias", true}}), "'mlp_bias' = true: biases on the MLP's projections are not modelled"));
  // (a string is not a boolean: "true" was read as false)
  EXPECT_TRUE(has(parse_error({{"mlp_bias", "true"}}), "'mlp_bias' must be true or false"));
  EXPECT_TRUE(has(parse_error({{"torch_dtype", 5}}), "'torch_dtype' = 5 must be a string"));
  EXPECT_EQ(parsed({{"torch_dtype", "bfloat16"}}).dtype, "bfloat16");
  EXPECT_EQ(parsed({{"torch_dtype", "float32"}}).dtype, "float32");
  // (any string was taken: a checkpoint's type is a torch floating-point one)
  for (const char* t : {"int8", "bogus", "", "BFloat16"})
    EXPECT_TRUE(has(parse_error({{"torch_dtype", t}}), "no torch floating-point type")) << t;
}

TEST(ModelConfig, ASlidingWindowIsKeptWhenInForce) {
  EXPECT_EQ(parsed({}).sliding_window, 0);
  EXPECT_EQ(parsed({{"sliding_window", nullptr}}).sliding_window, 0);  // Mixtral's
  EXPECT_EQ(parsed({{"model_type", "mistral"}, {"sliding_window", 4096}}).sliding_window, 4096);  // Mistral-7B-v0.1's
  EXPECT_EQ(parsed({{"sliding_window", 4096}, {"use_sliding_window", false}}).sliding_window, 0);  // Qwen2.5's
  EXPECT_EQ(parsed({{"sliding_window", 4096}, {"use_sliding_window", true}}).sliding_window, 4096);
  // As HuggingFace applies it. Mistral: 4096 when the key is absent (MistralConfig's default), none when null.
  EXPECT_EQ(parsed({{"model_type", "mistral"}}).sliding_window, 4096);
  EXPECT_EQ(parsed({{"model_type", "mistral"}, {"sliding_window", nullptr}}).sliding_window, 0);  // Mistral-7B-v0.3's
  EXPECT_EQ(parsed({{"model_type", "llama"}}).sliding_window, 0);
  // Qwen: only with use_sliding_window true (default false), on the layers from max_window_layers (default 28) on.
  const nlohmann::json qw = {{"model_type", "qwen2"}, {"sliding_window", 64}, {"use_sliding_window", true}};
  auto with = [](nlohmann::json j, const nlohmann::json& extra) { return j.update(extra), j; };
  EXPECT_EQ(parsed(with(qw, {{"use_sliding_window", nullptr}})).sliding_window, 0);
  EXPECT_EQ(parsed(with(qw, {{"max_window_layers", 1}})).sliding_window, 64);   // layer 1 of 2 slides
  EXPECT_EQ(parsed(with(qw, {{"max_window_layers", 2}})).sliding_window, 0);    // none of the 2 does
  EXPECT_EQ(parsed(qw).sliding_window, 0);                                       // (28: none of the 2)
  EXPECT_EQ(parsed(with(qw, {{"num_hidden_layers", 29}})).sliding_window, 64);   // (28: the 29th slides)
  // A layer_types list slides where it says so.
  const nlohmann::json lt = {{"sliding_window", 64}, {"layer_types", {"full_attention", "full_attention"}}};
  EXPECT_EQ(parsed(lt).sliding_window, 0);
  EXPECT_EQ(parsed(with(lt, {{"layer_types", {"full_attention", "sliding_attention"}}})).sliding_window, 64);
  EXPECT_TRUE(has(parse_error(with(lt, {{"layer_types", "full_attention"}})), "'layer_types' must be a list"));
  // A list HuggingFace refuses is refused, window or none (an unknown kind or a list too short turned the window
  // off without a word).
  std::string e = parse_error(with(lt, {{"layer_types", {"foo", "sliding_attention"}}}));
  EXPECT_TRUE(has(e, "'layer_types' holds \"foo\"")) << e;
  e = parse_error(with(lt, {{"layer_types", {"sliding_attention"}}}));
  EXPECT_TRUE(has(e, "'layer_types' has 1 entries for num_hidden_layers = 2")) << e;
  EXPECT_TRUE(has(parse_error({{"layer_types", 5}}), "'layer_types' must be a list"));
  EXPECT_TRUE(has(parse_error({{"layer_types", {"full_attention", "chunked_attention"}}}), "'layer_types' holds"));
  EXPECT_EQ(parse_error({{"layer_types", {"full_attention", "sliding_attention"}}}), "");  // (no window in force)
  EXPECT_EQ(load_model("qwen2.5-7b").sliding_window, 0);
  EXPECT_EQ(load_model("mixtral-8x7b").sliding_window, 0);
  EXPECT_TRUE(has(parse_error({{"sliding_window", 0}}), "'sliding_window' = 0 is outside"));
  EXPECT_TRUE(has(parse_error({{"sliding_window", 64}, {"use_sliding_window", "yes"}}), "'use_sliding_window' must be true or false"));
}

TEST(LayerGraph, HoldsEveryOperatorOfADecodeStep) {
  ModelConfig m = load_model("tiny-moe");
  LayerGraph g = build_graph(m, 2, 100);
  std::set<NodeKind> kinds;
  for (const auto& n : g.nodes) kinds.insert(n.kind);
  for (NodeKind k : {NodeKind::EmbeddingLookup, NodeKind::RmsNorm, NodeKind::Gemv, NodeKind::Rope, NodeKind::KvAppend,
                     NodeKind::AttnScores, NodeKind::SoftmaxMax, NodeKind::SoftmaxExpSum, NodeKind::SoftmaxScale,
                     NodeKind::AttnValues, NodeKind::ResidualAdd, NodeKind::Silu, NodeKind::Mul, NodeKind::Router,
                     NodeKind::Argmax})
    EXPECT_TRUE(kinds.count(k)) << to_string(k);
  EXPECT_EQ(g.stages.size(), std::size_t(m.layers + 2));
  // MACs: scores and values cover every query head over the whole context, for each sequence.
  std::int64_t attn = 0;
  for (const auto& n : g.nodes)
    if (n.kind == NodeKind::AttnScores && n.stage == "layer 0") attn = n.macs;
  EXPECT_EQ(attn, 100 * m.heads * m.head_dim * 2);
  EXPECT_THROW(build_graph(m, 0, 10), InputError);
  EXPECT_THROW(build_graph(m, 1, 0), InputError);
}
