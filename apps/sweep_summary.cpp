// The summary of a study (`wafer-emu sweep --summarize DIR`, also written when a study completes):
// per setting over the seeds, the placements side by side, the latency's sensitivity to each wafer-parameter
// axis. docs/studies.md, "The summary".
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <string>
#include <variant>
#include <vector>

#include "apps/sweep.h"
#include "hw/error.h"
#include "hw/wafer_spec.h"

namespace wafer::apps::sweep {

namespace {

using Cell = std::variant<double, std::int64_t, std::string>;

// A joint axis's value (an object of settings) reads as its values joined by '/': "square/meshgemv".
std::string cell(const ojson& v) {
  if (v.is_object()) {
    std::string s;
    for (auto it = v.begin(); it != v.end(); ++it) s += (s.empty() ? "" : "/") + cell(*it);
    return s;
  }
  return v.is_string() ? v.get<std::string>() : v.dump();
}

// An axis's value in a summary table: a number where the study gives one (summary.json's readers join it with the
// points' settings, which hold numbers), else its text as cell() gives it.
Cell axis_cell(const ojson& v) {
  if (v.is_number_integer() && !(v.is_number_unsigned() && v.get<std::uint64_t>() > std::uint64_t(INT64_MAX)))
    return v.get<std::int64_t>();
  if (v.is_number_float()) return v.get<double>();
  return cell(v);
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

// A table as CSV: numbers in full precision (17 digits), NaN as an empty field.
std::string table_csv(const traces::Table& t) {
  std::string csv;
  for (std::size_t c = 0; c < t.columns.size(); ++c) csv += (c ? "," : "") + csv_field(t.columns[c].header());
  csv += "\n";
  for (const auto& row : t.rows) {
    for (std::size_t c = 0; c < row.size(); ++c) {
      const std::string text = std::visit(
          [](const auto& v) -> std::string {
            using T = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<T, std::string>) return v;
            // (the shortest digits that read back as the same number: 17 wrote an axis's 0.1 as 0.10000000000000001)
            else if constexpr (std::is_same_v<T, double>) return std::isfinite(v) ? fmt::format("{}", v) : std::string();
            else return fmt::format("{}", v);
          },
          row[c]);
      csv += (c ? "," : "") + csv_field(text);
    }
    csv += "\n";
  }
  return csv;
}

double nan() { return std::nan(""); }

// One setting: every axis but the seed fixed, its seeds' points.
struct Group {
  ojson key;  // axis -> value, in the study's axis order
  std::int64_t points = 0, done = 0;
  std::vector<double> us;                       // latency of the good points, sorted once all are in
  std::map<std::string, std::int64_t> reasons;  // "stage: reason class" -> count
  std::int64_t with_repair = 0, repair_complete = 0;
  double usable_sum = 0, hops_sum = 0;
  std::int64_t usable_n = 0, hops_n = 0;

  std::int64_t ok() const { return std::int64_t(us.size()); }
  double mean() const { return us.empty() ? nan() : std::accumulate(us.begin(), us.end(), 0.0) / double(us.size()); }
  double p(double q) const { return us.empty() ? nan() : percentile(us, q); }
  bool all_ok() const { return done == points && ok() == points; }
};

ojson without(const ojson& key, const std::string& axis) {
  ojson k = key;
  k.erase(axis);
  return k;
}

// Groups of settings that agree on every axis but `axis`, in order of first appearance.
std::vector<std::vector<std::size_t>> split_by(const std::vector<Group>& groups, const std::string& axis) {
  std::vector<std::vector<std::size_t>> out;
  std::map<std::string, std::size_t> at;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    auto [it, fresh] = at.emplace(without(groups[g].key, axis).dump(), out.size());
    if (fresh) out.emplace_back();
    out[it->second].push_back(g);
  }
  return out;
}

}  // namespace

traces::Report summarize(const std::filesystem::path& dir, const Study& study, const std::map<std::int64_t, ojson>& lines) {
  std::vector<std::string> axes;
  for (const auto& [k, v] : study.axes)
    if (k != "seed") axes.push_back(k);
  std::vector<Group> groups;
  std::map<std::string, std::size_t> index;
  std::int64_t done = 0, failed = 0;
  Resolver resolver(study);  // (each point's wafer clock: check_point_line)
  for (std::int64_t i = 0; i < study.points(); ++i) {
    const ojson picked = study.axis_values(i);
    ojson key = ojson::object();
    for (const auto& a : axes) key[a] = picked[a];
    auto [it, fresh] = index.emplace(key.dump(), groups.size());
    if (fresh) {
      groups.emplace_back();
      groups.back().key = key;
    }
    Group& g = groups[it->second];
    ++g.points;
    auto l = lines.find(i);
    if (l == lines.end()) continue;
    ++g.done, ++done;
    const ojson& p = l->second;
    // (a line edited or damaged in place is not summarised: a latency string was counted a failure "? : ?",
    // -1e308 went into the mean, a status "weird" was a failure, a negative usable tile count went into the mean)
    check_point_line(p, study, i, (dir / "points.jsonl").string(), &resolver);
    // The repair happens before mapping: its outcome counts for failed points too.
    if (auto r = p.find("repair"); r != p.end() && r->is_object() && r->contains("complete") && (*r)["complete"].is_boolean()) {
      ++g.with_repair;
      if ((*r)["complete"].get<bool>()) ++g.repair_complete;
    }
    if (auto u = p.find("usable_tiles"); u != p.end() && u->is_number()) g.usable_sum += u->get<double>(), ++g.usable_n;
    if (auto h = p.find("extra_hops"); h != p.end() && h->is_number()) g.hops_sum += h->get<double>(), ++g.hops_n;
    if (p.value("status", std::string()) == "ok" && p.contains("latency_us") && p["latency_us"].is_number()) {
      g.us.push_back(p["latency_us"].get<double>());
    } else {
      ++failed;
      const auto f = p.find("failure");
      auto text = [&](const char* k) {
        if (f == p.end() || !f->is_object()) return std::string("?");
        const auto v = f->find(k);
        return v != f->end() && v->is_string() ? v->get<std::string>() : std::string("?");
      };
      ++g.reasons[fmt::format("{}: {}", text("stage"), reason_class(text("reason")))];
    }
  }
  for (auto& g : groups) std::sort(g.us.begin(), g.us.end());

  traces::Report rep(fmt::format("study {}{}: {} of {} points done", study.hash, study.name.empty() ? "" : " (" + study.name + ")",
                                 done, study.points()));
  rep.add_text("study", study.hash, "hash of the study file's content");
  rep.add_text("source", study.path, "the study file");
  rep.add_int("points", study.points(), "points");
  rep.add_int("points_done", done, "points");
  rep.add_int("points_failed", failed, "points", "the mapper or the emulator refused them");

  // ---- per setting ----
  std::vector<std::string> cols = axes;
  for (const char* c : {"points", "done", "ok", "failed", "mean [us]", "p5 [us]", "p50 [us]", "p95 [us]", "max [us]",
                        "repair ok [%]", "usable tiles [tiles]", "extra hops [hops]", "failures"})
    cols.emplace_back(c);
  auto& t = rep.add_table("settings", cols,
                          "latency per token over the seeds' good points (percentiles linear between closest ranks); "
                          "repair ok, usable tiles and extra hops (means) over every done point (a pipeline's point: "
                          "repair ok when every wafer's is, usable tiles its fewest wafer's, extra hops summed over its "
                          "wafers); failures by stage and "
                          "reason, numbers as #");
  for (const auto& g : groups) {
    std::string reasons;
    for (const auto& [r, n] : g.reasons) reasons += fmt::format("{}{} x {}", reasons.empty() ? "" : "; ", n, r);
    std::vector<Cell> row;
    for (const auto& a : axes) row.emplace_back(axis_cell(g.key[a]));
    row.emplace_back(g.points);
    row.emplace_back(g.done);
    row.emplace_back(g.ok());
    row.emplace_back(g.done - g.ok());
    for (double v : {g.mean(), g.p(5), g.p(50), g.p(95), g.p(100)}) row.emplace_back(v);
    row.emplace_back(g.with_repair ? 100.0 * double(g.repair_complete) / double(g.with_repair) : nan());
    row.emplace_back(g.usable_n ? g.usable_sum / double(g.usable_n) : nan());
    row.emplace_back(g.hops_n ? g.hops_sum / double(g.hops_n) : nan());
    row.emplace_back(reasons.empty() ? std::string("-") : reasons);
    t.rows.push_back(std::move(row));
  }
  write_shared(dir / "summary.csv", table_csv(t));

  // ---- placements side by side, the best per setting of the other axes ----
  // (the axis that sweeps the placement: "placement", or a joint axis that sets it with, say, its kernel)
  const std::string pa = study.axis_of("placement");
  if (!pa.empty()) {
    std::vector<std::string> others;
    for (const auto& a : axes)
      if (a != pa) others.push_back(a);
    std::vector<std::string> pc = others;
    for (const char* c : {"placement", "points", "ok", "mean [us]", "p50 [us]", "vs best [%]", "best"}) pc.emplace_back(c);
    // Rows first, tables after: a reference into the report is not kept across another add_table.
    traces::Table pt, bt;
    for (const auto& c : pc) pt.columns.push_back(traces::Column::parse(c));
    pt.description = std::string("each placement per setting of the other axes; the best has the lowest mean latency among "
                             "the placements with every seed done and ok (ties: lower p50, then the earlier in the axis)");
    std::vector<std::string> bc = others;
    for (const char* c : {"best", "mean [us]", "p50 [us]", "runner-up", "margin [%]", "note"}) bc.emplace_back(c);
    for (const auto& c : bc) bt.columns.push_back(traces::Column::parse(c));
    bt.description = "the best placement per setting of the other axes; margin: the runner-up's mean over the best's, in %";
    for (const auto& set : split_by(groups, pa)) {
      // Eligible: every seed done and ok. Ranked by mean, then p50, then axis order (stable sort).
      std::vector<std::size_t> ranked;
      for (std::size_t g : set)
        if (groups[g].all_ok()) ranked.push_back(g);
      std::stable_sort(ranked.begin(), ranked.end(), [&](std::size_t a, std::size_t b) {
        const Group &x = groups[a], &y = groups[b];
        if (x.mean() != y.mean()) return x.mean() < y.mean();
        return x.p(50) < y.p(50);
      });
      const Group* best = ranked.empty() ? nullptr : &groups[ranked[0]];
      for (std::size_t g : set) {
        const Group& x = groups[g];
        std::vector<Cell> row;
        for (const auto& a : others) row.emplace_back(axis_cell(x.key[a]));
        row.emplace_back(axis_cell(x.key[pa]));
        row.emplace_back(x.points);
        row.emplace_back(x.ok());
        row.emplace_back(x.mean());
        row.emplace_back(x.p(50));
        row.emplace_back(best && x.ok() ? 100.0 * (x.mean() / best->mean() - 1.0) : nan());
        std::string mark;
        if (&x == best) mark = "best";
        else if (x.done < x.points) mark = fmt::format("not ranked: {} of {} seeds not done", x.points - x.done, x.points);
        else if (!x.all_ok()) mark = fmt::format("not ranked: {} of {} seeds failed", x.points - x.ok(), x.points);
        else mark = "-";
        row.emplace_back(mark);
        pt.rows.push_back(std::move(row));
      }
      std::vector<Cell> row;
      for (const auto& a : others) row.emplace_back(axis_cell(groups[set[0]].key[a]));
      if (!best) {
        row.emplace_back(std::string("-"));
        for (int k = 0; k < 2; ++k) row.emplace_back(nan());
        row.emplace_back(std::string("-"));
        row.emplace_back(nan());
        row.emplace_back(std::string("no placement has every seed done and ok"));
      } else {
        row.emplace_back(axis_cell(best->key[pa]));
        row.emplace_back(best->mean());
        row.emplace_back(best->p(50));
        std::string note = fmt::format("{} of {} placements ranked", ranked.size(), set.size());
        if (ranked.size() > 1) {
          const Group& second = groups[ranked[1]];
          row.emplace_back(axis_cell(second.key[pa]));
          row.emplace_back(100.0 * (second.mean() / best->mean() - 1.0));
          if (second.mean() == best->mean())
            note += fmt::format("; tie on the mean with {}{}", cell(second.key[pa]),
                                second.p(50) == best->p(50) ? " (and the p50: the earlier in the axis wins)" : " (lower p50 wins)");
        } else {
          row.emplace_back(std::string("-"));
          row.emplace_back(nan());
        }
        row.emplace_back(note);
      }
      bt.rows.push_back(std::move(row));
    }
    write_shared(dir / "placements.csv", table_csv(pt));
    rep.add_table("placements", pc, pt.description).rows = std::move(pt.rows);
    rep.add_table("best_placement", bc, bt.description).rows = std::move(bt.rows);
  }

  // ---- sensitivity to each wafer-parameter axis ----
  std::vector<std::string> params;
  for (const auto& [k, vs] : study.axes)
    if (k != "seed" && vs.size() >= 2 && std::any_of(hw::wafer_params().begin(), hw::wafer_params().end(),
                                                      [&](const hw::ParamInfo& p) { return p.key == k; }))
      params.push_back(k);
  if (!params.empty()) {
    std::vector<std::string> sc = {"parameter", "unit"};
    for (const auto& a : axes) sc.push_back(a);
    for (const char* c : {"values", "slope [us per unit]", "elasticity [% per %]", "r2 [fraction]", "latency at lowest [us]",
                          "latency at highest [us]", "note"})
      sc.emplace_back(c);
    auto& st = rep.add_table("sensitivity", sc,
                             "per wafer-parameter axis and setting of the other axes: the least-squares slope of the mean "
                             "latency (over the seeds' good points) against the parameter's values, and the elasticity "
                             "slope x mean(parameter) / mean(latency)");
    for (const auto& prm : params) {
      std::string unit;
      for (const auto& p : hw::wafer_params())
        if (p.key == prm) unit = std::string(p.unit);
      for (const auto& set : split_by(groups, prm)) {
        std::vector<double> x, y;
        std::int64_t values = 0;
        for (std::size_t g : set) {
          ++values;
          if (groups[g].ok() == 0) continue;
          x.push_back(groups[g].key[prm].get<double>());
          y.push_back(groups[g].mean());
        }
        std::vector<Cell> row = {prm, unit};
        for (const auto& a : axes) row.emplace_back(a == prm ? Cell(std::string("swept")) : axis_cell(groups[set[0]].key[a]));
        row.emplace_back(fmt::format("{} of {}", x.size(), values));
        const double n = double(x.size());
        const double mx = n > 0 ? std::accumulate(x.begin(), x.end(), 0.0) / n : nan();
        const double my = n > 0 ? std::accumulate(y.begin(), y.end(), 0.0) / n : nan();
        double sxx = 0, sxy = 0, syy = 0;
        for (std::size_t k = 0; k < x.size(); ++k) {
          sxx += (x[k] - mx) * (x[k] - mx);
          sxy += (x[k] - mx) * (y[k] - my);
          syy += (y[k] - my) * (y[k] - my);
        }
        std::size_t lo = 0, hi = 0;
        for (std::size_t k = 0; k < x.size(); ++k) {
          if (x[k] < x[lo]) lo = k;
          if (x[k] > x[hi]) hi = k;
        }
        if (x.size() >= 2 && sxx > 0) {
          const double slope = sxy / sxx;
          row.emplace_back(slope);
          row.emplace_back(my != 0 ? slope * mx / my : nan());
          row.emplace_back(syy > 0 ? sxy * sxy / (sxx * syy) : 1.0);
          row.emplace_back(y[lo]);
          row.emplace_back(y[hi]);
          row.emplace_back(x.size() < std::size_t(values) ? std::string("values without a good point left out")
                                                          : std::string("-"));
        } else {
          for (int k = 0; k < 3; ++k) row.emplace_back(nan());
          row.emplace_back(x.empty() ? nan() : y[lo]);
          row.emplace_back(x.empty() ? nan() : y[hi]);
          row.emplace_back(std::string("fewer than two values with a good point"));
        }
        st.rows.push_back(std::move(row));
      }
    }
    write_shared(dir / "sensitivity.csv", table_csv(st));
  }

  write_shared(dir / "summary.json", traces::results_json(rep).dump(2) + "\n");
  return rep;
}

}  // namespace wafer::apps::sweep
