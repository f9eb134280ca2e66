// Energy figures (issue 27) through HTTP: cpu_ms and energy_j in the timings of both endpoints
// and in the request log, the counters of /metrics and the energy block of GET /props; energy_j
// null (not 0) and the energy series absent without RAPL, numbers with a (fake) readable RAPL tree.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "http/routes/http_test_util.h"
#include "model/test_support.h"

namespace tandem::http {
namespace {

using namespace tandem::http::testing;
namespace fs = std::filesystem;

Json energy_chat(const std::string& user) {
  return Json{{"model", "tiny"},
              {"messages", Json::array({Json{{"role", "user"}, {"content", user}}})},
              {"max_tokens", 4},
              {"temperature", 0}};
}

Json post_ok(TestServer& s, const std::string& path, const Json& body) {
  auto r = s.client()->Post(path, to_text(body), "application/json");
  EXPECT_TRUE(r);
  if (!r) return Json();
  EXPECT_EQ(r->status, 200) << r->body;
  return Json::parse(r->body);
}

// The value of an unlabelled sample in Prometheus text; nullopt when the series is absent.
std::optional<double> sample(const std::string& text, const std::string& name) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(name + " ", 0) == 0) return std::stod(line.substr(name.size() + 1));
  return std::nullopt;
}

std::string metrics(TestServer& s) {
  auto r = s.client()->Get("/metrics");
  EXPECT_TRUE(r);
  return r ? r->body : std::string();
}

serve::EngineConfig with_powercap(const std::string& root) {
  serve::EngineConfig c = small_engine();
  c.powercap_root = root;
  return c;
}

TEST(HttpEnergy, WithoutRaplCpuTimeIsReportedAndEnergyIsNull) {
  TestServer s(with_powercap(::testing::TempDir() + "/tandem-no-powercap-here"));
  const Json chat = post_ok(s, "/v1/chat/completions", energy_chat("Open the settings app."));
  const Json completion = post_ok(s, "/completion", Json{{"prompt", "Tap the search field."}, {"n_predict", 3}});
  double sum_ms = 0;
  for (const Json* j : {&chat, &completion}) {
    const Json& t = (*j)["timings"];
    ASSERT_TRUE(t.contains("cpu_ms"));
    ASSERT_TRUE(t["cpu_ms"].is_number());
    EXPECT_GT(t["cpu_ms"].get<double>(), 0.0) << "a prefill ran on the compute threads";
    ASSERT_TRUE(t.contains("energy_j"));
    EXPECT_TRUE(t["energy_j"].is_null()) << t["energy_j"];
    sum_ms += t["cpu_ms"].get<double>();
  }
  const std::vector<Json> log = s.take_records();
  ASSERT_EQ(log.size(), 2u);
  for (const Json& rec : log) {
    EXPECT_GT(rec["timings"]["cpu_ms"].get<double>(), 0.0);
    EXPECT_TRUE(rec["timings"]["energy_j"].is_null());
  }
  EXPECT_DOUBLE_EQ(log[0]["timings"]["cpu_ms"].get<double>(), chat["timings"]["cpu_ms"].get<double>());

  const std::string m = metrics(s);
  ASSERT_TRUE(sample(m, "tandem_request_cpu_seconds_total"));
  EXPECT_NEAR(*sample(m, "tandem_request_cpu_seconds_total"), sum_ms / 1000.0, 1e-9);
  ASSERT_TRUE(sample(m, "tandem_compute_cpu_seconds_total"));
  EXPECT_GE(*sample(m, "tandem_compute_cpu_seconds_total") + 1e-9, sum_ms / 1000.0);
  ASSERT_TRUE(sample(m, "tandem_process_cpu_seconds_total"));
  EXPECT_GE(*sample(m, "tandem_process_cpu_seconds_total"), *sample(m, "tandem_compute_cpu_seconds_total"));
  EXPECT_EQ(sample(m, "tandem_energy_available"), 0.0);
  EXPECT_FALSE(sample(m, "tandem_package_energy_joules_total")) << "no fake 0 without RAPL";
  EXPECT_FALSE(sample(m, "tandem_request_energy_joules_total"));

  auto p = s.client()->Get("/props");
  ASSERT_TRUE(p);
  const Json e = Json::parse(p->body)["energy"];
  EXPECT_EQ(e["package_energy"], false);
  EXPECT_NE(e["unavailable_reason"].get<std::string>().find("tandem-no-powercap-here"), std::string::npos) << e;
  EXPECT_EQ(e["compute_threads"], 2) << "the tiny model's pool has one worker; the scheduler is the other";
}

TEST(HttpEnergy, WithReadableRaplEnergyIsANumber) {
  const fs::path root = fs::path(::testing::TempDir()) / ("tandem-http-powercap-" + std::to_string(::getpid()));
  test_support::write_fake_rapl(root, 262143328850, 5000000);
  {
    TestServer s(with_powercap(root.string()));
    // The fake counter does not move during the request: its figure is an exact 0, a number.
    const Json chat = post_ok(s, "/v1/chat/completions", energy_chat("Open the settings app."));
    ASSERT_TRUE(chat["timings"]["energy_j"].is_number()) << chat["timings"];
    EXPECT_EQ(chat["timings"]["energy_j"].get<double>(), 0.0);
    EXPECT_TRUE(s.take_records().at(0)["timings"]["energy_j"].is_number());

    test_support::set_rapl_energy(root, 8500000);  // 3.5 J later
    const std::string m = metrics(s);
    EXPECT_EQ(sample(m, "tandem_energy_available"), 1.0);
    ASSERT_TRUE(sample(m, "tandem_package_energy_joules_total")) << m;
    EXPECT_DOUBLE_EQ(*sample(m, "tandem_package_energy_joules_total"), 3.5);
    ASSERT_TRUE(sample(m, "tandem_request_energy_joules_total"));
    EXPECT_EQ(*sample(m, "tandem_request_energy_joules_total"), 0.0);
    EXPECT_EQ(sample(m, "tandem_request_energy_requests_total"), 1.0);

    auto p = s.client()->Get("/props");
    ASSERT_TRUE(p);
    const Json e = Json::parse(p->body)["energy"];
    EXPECT_EQ(e["package_energy"], true);
    EXPECT_EQ(e["package_zones"], Json::array({"intel-rapl:0 (package-0)"}));
    EXPECT_TRUE(e["unavailable_reason"].is_null());
  }
  fs::remove_all(root);
}

}  // namespace
}  // namespace tandem::http
