// The watchdog through HTTP (issue 27, item 3):
//  * in process, with a hang injected into the first forward pass (WatchdogConfig::work_hook, the
//    "wait" mode): the client gets a 503 naming the watchdog and the deadline, whole and streamed;
//    /health answers 503 saying what is stuck and that the server waits; new requests get 503;
//    /metrics and /props count the trip; released, /health is 200 again and requests are served;
//  * the real tandem-server with TANDEM_TEST_WATCHDOG_HANG=1 (every forward pass hangs): the
//    client's 503, /health's "exit" state, and the process exiting with status 75.
// Deadlines of 300 ms (1 s for the process) and waits of a minute: load slows these tests, it does
// not fail them.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <string_view>
#include <vector>

#include "http/routes/http_test_util.h"
#include "model/test_paths.h"
#include "serve/lifecycle/watchdog_test_util.h"

extern char** environ;

namespace tandem::http {
namespace {

using namespace tandem::http::testing;
using namespace std::chrono_literals;

Json watchdog_chat(const std::string& user, bool stream = false) {
  return Json{{"model", "tiny"},
              {"messages", Json::array({Json{{"role", "user"}, {"content", user}}})},
              {"max_tokens", 4},
              {"temperature", 0},
              {"stream", stream}};
}

// Blocks the scheduler in forward passes until opened.
using Gate = serve::testing::WatchdogGate;
using serve::testing::OpenOnExit;

TEST(HttpWatchdog, HealthAndTheClientSeeAHungPassThenTheServerRecovers) {
  auto gate = std::make_shared<Gate>();
  serve::EngineConfig cfg = small_engine();
  cfg.watchdog.deadline_ms = 300;
  cfg.watchdog.per_token_ms = 0;
  cfg.watchdog.exit_on_trip = false;  // "wait": a test process must not exit
  cfg.watchdog.work_hook = [gate](const serve::WorkUnit& u) { gate->hook(u); };
  TestServer s(cfg);
  OpenOnExit opener{gate};
  auto c = s.client();
  ASSERT_EQ(c->Get("/health")->status, 200);

  // Whole: the stuck request's client reads a 503 naming the watchdog, the work and the deadline.
  auto r = c->Post("/v1/chat/completions", to_text(watchdog_chat("Open the settings app.")), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503) << r->body;
  const Json err = Json::parse(r->body)["error"];
  EXPECT_EQ(err["type"], "unavailable_error");
  const std::string msg = err["message"];
  EXPECT_NE(msg.find("watchdog: slot 0, request 1: a forward pass of"), std::string::npos) << msg;
  EXPECT_NE(msg.find("past its deadline of 0.3 s"), std::string::npos) << msg;

  // /health: 503, what is stuck, and that the server waits for it (no exit in this mode).
  auto h = c->Get("/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 503);
  const Json hj = Json::parse(h->body);
  EXPECT_EQ(hj["status"], "error");
  EXPECT_EQ(hj["error"]["code"], 503);
  EXPECT_EQ(hj["error"]["message"], msg);
  const Json& wd = hj["watchdog"];
  EXPECT_EQ(wd["tripped"], true);
  EXPECT_EQ(wd["stuck"], true);
  EXPECT_EQ(wd["action"], "wait");
  EXPECT_EQ(wd["exit_status"], 75);
  EXPECT_EQ(wd["trips"], 1);
  EXPECT_EQ(wd["last_trip"]["work"], "pass");
  EXPECT_EQ(wd["last_trip"]["phase"], "prefill");
  EXPECT_EQ(wd["last_trip"]["slot"], 0);
  EXPECT_EQ(wd["last_trip"]["id_task"], 1);
  EXPECT_EQ(wd["last_trip"]["deadline_ms"], 300);

  // New requests, whole and streamed, are refused with the reason while it is stuck.
  auto r2 = c->Post("/v1/chat/completions", to_text(watchdog_chat("Tap the search field.")), "application/json");
  ASSERT_TRUE(r2);
  EXPECT_EQ(r2->status, 503);
  EXPECT_NE(r2->body.find("watchdog: the engine is stuck"), std::string::npos) << r2->body;
  auto r3 = c->Post("/v1/chat/completions", to_text(watchdog_chat("Tap the search field.", true)), "application/json");
  ASSERT_TRUE(r3);
  EXPECT_EQ(r3->status, 503);

  // /metrics and /props report the trip and the settings.
  auto m = c->Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_NE(m->body.find("tandem_watchdog_trips_total 1\n"), std::string::npos);
  EXPECT_NE(m->body.find("tandem_watchdog_tripped 1\n"), std::string::npos);
  EXPECT_NE(m->body.find("tandem_watchdog_deadline_seconds 0.29"), std::string::npos);
  const Json props = Json::parse(c->Get("/props")->body);
  EXPECT_EQ(props["watchdog"]["trips"], 1);
  EXPECT_EQ(props["settings"]["watchdog-s"]["value"], "0.3");
  EXPECT_EQ(props["settings"]["watchdog-s"]["default"], "60");
  EXPECT_EQ(props["settings"]["watchdog-exit"]["value"], "off");

  // Released: healthy again, and a request is served.
  gate->open();
  ASSERT_TRUE(wait_until([&] {
    const auto h = c->Get("/health");
    return h && h->status == 200;
  }));
  EXPECT_EQ(Json::parse(c->Get("/health")->body), Json({{"status", "ok"}}));
  ASSERT_TRUE(wait_until([&] { return all_slots_idle(*s.engine); }));
  auto ok = c->Post("/v1/chat/completions", to_text(watchdog_chat("Tap the search field.")), "application/json");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200) << ok->body;
}

TEST(HttpWatchdog, AStreamedAnswerEndsWithTheWatchdogsError) {
  auto gate = std::make_shared<Gate>();
  serve::EngineConfig cfg = small_engine();
  cfg.watchdog.deadline_ms = 300;
  cfg.watchdog.per_token_ms = 0;
  cfg.watchdog.exit_on_trip = false;
  cfg.watchdog.work_hook = [gate](const serve::WorkUnit& u) { gate->hook(u); };
  TestServer s(cfg);
  OpenOnExit opener{gate};
  auto c = s.client();
  auto r = c->Post("/v1/chat/completions", to_text(watchdog_chat("Open the settings app.", true)), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);  // the stream had started
  const std::vector<std::string> ev = sse_data(r->body);
  bool saw = false;
  for (const std::string& e : ev) {
    if (e == "[DONE]") continue;
    const Json j = Json::parse(e);
    if (j.contains("error")) {
      saw = true;
      EXPECT_EQ(j["error"]["code"], 503);
      EXPECT_NE(j["error"]["message"].get<std::string>().find("past its deadline"), std::string::npos);
    }
  }
  EXPECT_TRUE(saw) << r->body;
}

// --- The process: tandem-server exits with status 75 ---

struct Child {
  pid_t pid = -1;
  int out = -1;  // its stdout
  ~Child() {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
    if (out >= 0) ::close(out);
  }
};

// Reads the child's stdout until "listening on http://127.0.0.1:PORT" (the port), or -1.
int read_port(int fd, std::chrono::milliseconds timeout) {
  std::string got;
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    char buf[512];
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) return -1;
    got.append(buf, static_cast<size_t>(n));
    const std::string key = "listening on http://127.0.0.1:";
    const size_t at = got.find(key);
    if (at != std::string::npos) {
      const size_t b = at + key.size();
      const size_t e = got.find_first_not_of("0123456789", b);
      if (e != std::string::npos) return std::stoi(got.substr(b, e - b));
    }
  }
  return -1;
}

// waitpid with a deadline: the exit status, or -1.
int wait_exit(pid_t pid, std::chrono::milliseconds timeout) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    int st = 0;
    const pid_t r = ::waitpid(pid, &st, WNOHANG);
    if (r == pid) return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    std::this_thread::sleep_for(20ms);
  }
  return -1;
}

TEST(HttpWatchdog, TheServerProcessExitsWithStatus75) {
  const std::string server = std::string(TANDEM_BINARY_DIR) + "/tandem-server";
  if (!std::filesystem::exists(server)) GTEST_SKIP() << server << " is not built (ninja tandem-server)";
  const std::string model = ensure_tiny_model("F32");
  // Everything the child needs is built before fork(): the test process has threads, so the
  // child calls only async-signal-safe functions before exec.
  // A grace of 10 s: time to read /health before the exit on a loaded machine.
  std::vector<std::string> args = {server, "-m", model, "--port", "0", "-t", "1", "--watchdog-s", "1",
                                   "--watchdog-ms-per-token", "0", "--watchdog-grace-ms", "10000"};
  std::vector<std::string> env = {"TANDEM_TEST_WATCHDOG_HANG=1"};
  for (char** e = environ; *e; ++e)
    if (std::string_view(*e).rfind("TANDEM_TEST_WATCHDOG_HANG=", 0) != 0) env.emplace_back(*e);
  std::vector<char*> argv, envp;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  int pipefd[2];
  ASSERT_EQ(::pipe(pipefd), 0);
  Child child;
  child.pid = ::fork();
  ASSERT_GE(child.pid, 0);
  if (child.pid == 0) {
    ::dup2(pipefd[1], STDOUT_FILENO);
    ::close(pipefd[0]);
    ::close(pipefd[1]);
    const int devnull = ::open("/dev/null", O_WRONLY);
    if (devnull >= 0) ::dup2(devnull, STDERR_FILENO);
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(127);
  }
  ::close(pipefd[1]);
  child.out = pipefd[0];
  const int port = read_port(child.out, 120s);
  ASSERT_GT(port, 0) << "tandem-server did not start";

  httplib::Client c("127.0.0.1", port);
  c.set_connection_timeout(5);
  c.set_read_timeout(120);
  auto r = c.Post("/v1/chat/completions", to_text(watchdog_chat("Open the settings app.")), "application/json");
  ASSERT_TRUE(r) << "no answer before the exit";
  EXPECT_EQ(r->status, 503);
  EXPECT_NE(r->body.find("watchdog: slot 0, request 1: a forward pass of"), std::string::npos) << r->body;
  EXPECT_NE(r->body.find("the server is restarting (exit status 75)"), std::string::npos) << r->body;
  auto h = c.Get("/health");
  ASSERT_TRUE(h) << "no /health answer during the grace";
  EXPECT_EQ(h->status, 503);
  const Json wd = Json::parse(h->body)["watchdog"];
  EXPECT_EQ(wd["action"], "exit");
  EXPECT_EQ(wd["exit_status"], 75);
  EXPECT_LE(wd["exit_in_ms"].get<int64_t>(), 10000);

  EXPECT_EQ(wait_exit(child.pid, 120s), 75);
  child.pid = -1;
}

}  // namespace
}  // namespace tandem::http
