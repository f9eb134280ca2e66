// The serving settings: one table of every setting of serve::EngineConfig that a command line
// sets (tandem-server's flags, with llama.cpp's names where llama.cpp has one). Each row has its
// names, its value syntax, its help text, whether the replay model's counts depend on it, whether
// it is one of the paper's ablation switches, and a setter and a getter. The table is read by
//   - tandem-server's parser and --help (serve/settings/server_options.cpp, which adds the front end's own
//     rows: host, port, threads, ... built from the same row type),
//   - GET /props ("settings": every row's current value and default, http/routes/routes_info.cpp),
//   - tandem-sim's --config (agent::parse_serve_flags: the rows that change counts apply, the
//     others are skipped with their value).
//
// Defaults have one source: the member initializers of EngineConfig and the structs it holds. A
// row's default is what its getter reads from a default-constructed EngineConfig, and --help and
// /props print exactly that; `row.set(c, flag, row.get(EngineConfig{}))` gives the default back.
//
// Ablations (the paper's §4.3 / §3.4 switches: each turns one mechanism off without changing the
// output, so that the ablations run in one binary): --consolidate-batches (BatchConfig::consolidate)
// and the SpecConfig switches --spec-rollback-aware, --spec-column-shared, --spec-trimmed-head and
// --spec-rollback (the booleans SpecConfig groups after p_min). They stay where the mechanisms read
// them; the table marks them `ablation` and ablation_settings() lists them together.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "serve/engine/engine.h"

namespace tandem::serve {

// One command-line setting of a Target (EngineConfig here; the front end's options in http/).
template <class Target>
struct SettingRow {
  std::vector<std::string> names;    // e.g. {"-c", "--ctx-size"}, as --help shows them: the last is the long name
  std::vector<std::string> aliases;  // also accepted, not shown (llama.cpp's other spellings)
  std::string value;               // value syntax for --help ("N", "on|off"); empty: a switch without a value
  // --help text; "{}" stands for the default (the getter's text on a default Target); '\n' starts a
  // continuation line.
  std::string help;
  bool changes_counts = false;  // the replay model's counts (N - R, passes, checkpoints, ...) depend on it
  bool ablation = false;        // one of the paper's ablation switches
  // flag: the name as given (for messages); value: empty for a switch. Throws std::invalid_argument.
  std::function<void(Target&, const std::string& flag, const std::string& value)> set;
  // The value as the flag takes it ("4096", "on", "divergence"); empty: not reported.
  std::function<std::string(const Target&)> get;

  const std::string& long_name() const { return names.back(); }
  // The long name without its dashes: the key in /props "settings".
  std::string key() const { return long_name().substr(long_name().find_first_not_of('-')); }
  bool named(std::string_view n) const {
    for (const std::string& x : names)
      if (x == n) return true;
    for (const std::string& x : aliases)
      if (x == n) return true;
    return false;
  }
};

using ServingSetting = SettingRow<EngineConfig>;

// The serving settings, in --help order.
const std::vector<ServingSetting>& serving_settings();
// The rows marked `ablation`.
std::vector<const ServingSetting*> ablation_settings();
// Throws std::invalid_argument for combinations no single row can check: --draft-min above
// --draft-max, --n-ubatch above --n-batch (the messages name both flags and values).
void validate_serving(const EngineConfig& c);

// Value parsers of the rows (also used by the front end's rows). Each throws std::invalid_argument
// naming the flag: "FLAG: expected an integer, got 'V'", "FLAG: expected a value in [LO, HI], got V",
// "FLAG: expected on or off, got 'V'", "FLAG: expected a probability in [0, 1], got 'V'".
int64_t setting_int(const std::string& flag, const std::string& v, int64_t lo, int64_t hi);
bool setting_on_off(const std::string& flag, const std::string& v);
float setting_probability(const std::string& flag, const std::string& v);
std::string on_off(bool on);

// One --help line (with continuation lines): "  -c, --ctx-size N" padded to the help column, then
// the help with "{}" replaced by default_text.
std::string setting_help_line(const std::vector<std::string>& names, const std::string& value, const std::string& help,
                              const std::string& default_text);

// The upper bound of an integer setting that has none in practice (a count, a size, a time).
inline constexpr int64_t kSettingUnbounded = int64_t(1) << 40;

// A row of an integer field in [lo, hi] and a row of an on|off field; `field` maps a Target to the
// field ([](auto& c) -> auto& { return c.n_ctx; }). Both tables build their rows with these.
template <class Target, class Field>
SettingRow<Target> int_setting(std::vector<std::string> names, std::vector<std::string> aliases, std::string value,
                               std::string help, bool counts, int64_t lo, int64_t hi, Field field) {
  SettingRow<Target> r;
  r.names = std::move(names);
  r.aliases = std::move(aliases);
  r.value = std::move(value);
  r.help = std::move(help);
  r.changes_counts = counts;
  r.set = [=](Target& c, const std::string& flag, const std::string& v) {
    auto& f = field(c);
    f = static_cast<std::remove_reference_t<decltype(f)>>(setting_int(flag, v, lo, hi));
  };
  r.get = [=](const Target& c) { return std::to_string(field(c)); };
  return r;
}
template <class Target, class Field>
SettingRow<Target> on_off_setting(std::vector<std::string> names, std::string help, bool counts, bool ablation,
                                  Field field) {
  SettingRow<Target> r;
  r.names = std::move(names);
  r.value = "on|off";
  r.help = std::move(help);
  r.changes_counts = counts;
  r.ablation = ablation;
  r.set = [=](Target& c, const std::string& flag, const std::string& v) { field(c) = setting_on_off(flag, v); };
  r.get = [=](const Target& c) { return on_off(field(c)); };
  return r;
}

template <class Target>
const SettingRow<Target>* find_setting(std::span<const SettingRow<Target>> rows, std::string_view name) {
  for (const SettingRow<Target>& r : rows)
    if (r.named(name)) return &r;
  return nullptr;
}

// The --help lines of these rows, with the defaults of `defaults`.
template <class Target>
std::string settings_help(std::span<const SettingRow<Target>> rows, const Target& defaults = Target{}) {
  std::string out;
  for (const SettingRow<Target>& r : rows) out += setting_help_line(r.names, r.value, r.help, r.get ? r.get(defaults) : "");
  return out;
}

// Applies args[i] (a name of `row`) and its value, if the row takes one, advancing i past it.
// Throws std::invalid_argument ("FLAG needs a value") at the end of the arguments.
template <class Target>
void apply_setting(const SettingRow<Target>& row, Target& t, const std::vector<std::string>& args, size_t& i) {
  const std::string& flag = args[i];
  if (row.value.empty()) {
    row.set(t, flag, std::string());
    return;
  }
  if (i + 1 >= args.size()) throw std::invalid_argument(flag + " needs a value");
  row.set(t, flag, args[++i]);
}

}  // namespace tandem::serve
