#include "mapper/kernels.h"

#include <fmt/format.h>

#include <algorithm>

#include "hw/error.h"
#include "mapper/emit.h"
#include "mapper/mapper.h"

namespace wafer::mapper {

namespace {

void check_region(const hw::WaferSpec& spec, hw::Rect r) {
  if (r.w < 1 || r.h < 1 || r.x0 < 0 || r.y0 < 0 || r.x0 + r.w > spec.logical_width || r.y0 + r.h > spec.logical_height)
    throw hw::InputError(fmt::format("region {}x{} at ({},{}) does not fit the {} x {} wafer '{}'", r.w, r.h, r.x0,
                                     r.y0, spec.logical_width, spec.logical_height, spec.name));
}

firmware::Image run(const hw::WaferSpec& spec, const ModelConfig& model, detail::StageSpec s, std::int64_t batch,
                    std::int64_t context, std::uint16_t done_arrivals, std::int64_t tokens = 1,
                    const std::vector<StepSequence>& step = {}) {
  check_region(spec, s.region.rect);
  detail::EmitParams ep;
  ep.spec = &spec, ep.model = &model, ep.batch = batch, ep.context = context, ep.weight_bytes = 2;
  ep.tokens = tokens;
  ep.step = step;
  detail::Emitter em(ep, spec.logical());
  s.in_arrivals.assign(std::size_t(s.region.rect.h), 1);
  em.add(s);
  firmware::Image img = em.finish({"kernel"});
  const hw::Rect& r = s.region.rect;
  img.done_tile = {detail::residual_x(s.region), r.y0 + r.h - 1};
  img.done_color = detail::color::kDone;
  img.done_arrivals = done_arrivals;
  return img;
}

std::uint32_t wavelets(const hw::WaferSpec& spec, std::int64_t values, std::int64_t batch) {
  std::int64_t bytes = values * batch * kActivationBytes;
  return std::uint32_t(std::max<std::int64_t>(1, (bytes + spec.wavelet_bytes - 1) / spec.wavelet_bytes));
}

}  // namespace

firmware::Image map_gemv(const hw::WaferSpec& spec, hw::Rect region, std::int64_t k, std::int64_t n,
                         std::int64_t batch) {
  if (k < 1 || n < 1 || batch < 1) throw hw::InputError("map_gemv: K, N and batch must be positive");
  ModelConfig m;
  m.hidden = k, m.heads = m.kv_heads = 1, m.head_dim = k;
  detail::StageSpec s;
  s.kind = detail::StageKind::Gemv;
  s.name = "gemv";
  s.region = {region, false};
  s.out = detail::OutKind::Collect;
  s.k = k, s.n = n;
  firmware::Image img = run(spec, m, s, batch, 1, std::uint16_t(region.w));
  for (std::int32_t r = 0; r < region.h; ++r)
    img.start.push_back({{region.x0 + region.w - 1, region.y0 + r}, detail::color::kResIn,
                         wavelets(spec, detail::split(k, region.h, r), batch)});
  return img;
}

firmware::Image map_rmsnorm(const hw::WaferSpec& spec, hw::Rect region, std::int64_t n, std::int64_t batch) {
  if (n < 1 || batch < 1) throw hw::InputError("map_rmsnorm: n and batch must be positive");
  ModelConfig m;
  m.hidden = n, m.heads = m.kv_heads = 1, m.head_dim = n;
  detail::StageSpec s;
  s.kind = detail::StageKind::Norm;
  s.name = "rms_norm";
  s.region = {region, false};
  s.out = detail::OutKind::Collect;
  s.k = n;
  firmware::Image img = run(spec, m, s, batch, 1, std::uint16_t(region.h));
  for (std::int32_t r = 0; r < region.h; ++r)
    img.start.push_back({{region.x0 + region.w - 1, region.y0 + r}, detail::color::kResIn,
                         wavelets(spec, detail::split(n, region.h, r), batch)});
  return img;
}

firmware::Image map_attention(const hw::WaferSpec& spec, hw::Rect region, const ModelConfig& model,
                              std::int64_t context, std::int64_t batch, std::int64_t tokens) {
  if (context < 1 || batch < 1) throw hw::InputError("map_attention: context and batch must be positive");
  if (tokens < 1 || tokens > context) throw hw::InputError("map_attention: tokens must be between 1 and the context");
  detail::StageSpec s;
  s.kind = detail::StageKind::Attention;
  s.name = "attention";
  s.region = {region, false};
  s.out = detail::OutKind::Collect;
  firmware::Image img = run(spec, model, s, batch, context, std::uint16_t(region.w), tokens);
  detail::EmitParams ep;
  ep.spec = &spec, ep.model = &model, ep.batch = batch, ep.context = context, ep.tokens = tokens;
  for (std::int32_t i = 0; i < region.w; ++i) {
    detail::ColKey ck = detail::col_key(s, ep, i);
    std::int64_t dims = ck.v[6];
    img.start.push_back({{region.x0 + i, region.y0 + region.h - 1}, detail::color::kLocal,
                         wavelets(spec, (model.group() + 2) * dims, batch * tokens)});
  }
  return img;
}

firmware::Image map_attention(const hw::WaferSpec& spec, hw::Rect region, const ModelConfig& model,
                              const std::vector<StepSequence>& step) {
  if (step.empty()) throw hw::InputError("map_attention: a mixed step needs at least one sequence");
  std::int64_t context = 0, vectors = 0;
  for (const auto& q : step) {
    if (q.tokens < 1 || q.tokens > q.context)
      throw hw::InputError("map_attention: tokens must be between 1 and the context of their sequence");
    context = std::max(context, q.context), vectors += q.tokens;
  }
  detail::StageSpec s;
  s.kind = detail::StageKind::Attention;
  s.name = "attention";
  s.region = {region, false};
  s.out = detail::OutKind::Collect;
  firmware::Image img = run(spec, model, s, std::int64_t(step.size()), context, std::uint16_t(region.w), 1, step);
  detail::EmitParams ep;
  ep.spec = &spec, ep.model = &model, ep.batch = std::int64_t(step.size()), ep.context = context, ep.step = step;
  for (std::int32_t i = 0; i < region.w; ++i) {
    detail::ColKey ck = detail::col_key(s, ep, i);
    img.start.push_back({{region.x0 + i, region.y0 + region.h - 1}, detail::color::kLocal,
                         wavelets(spec, (model.group() + 2) * ck.v[6], vectors)});
  }
  return img;
}

}  // namespace wafer::mapper
