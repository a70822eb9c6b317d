// Throwaway PostgreSQL server (see pg_server.h).
#include "testing/pg_server.h"

#include <arpa/inet.h>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <pwd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <stdexcept>

namespace fusekit {
namespace {

// The newest Debian server binaries, else those on PATH.
std::string find_bin_dir() {
  std::string best;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/usr/lib/postgresql", ec))
    if (std::filesystem::exists(e.path() / "bin" / "initdb") && e.path().string() > best) best = e.path().string();
  if (!best.empty()) return best + "/bin";
  if (std::system("command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1") == 0) return "";
  return "-";
}

int free_port() {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  int port = 0;
  if (bind(s, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      getsockname(s, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  close(s);
  return port;
}

std::string read_tail(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  std::string t = s.str();
  return t.size() > 600 ? t.substr(t.size() - 600) : t;
}

}  // namespace

PgServer::PgServer() {
  bin_ = find_bin_dir();
  if (bin_ == "-") {
    reason_ = "no PostgreSQL server binaries (initdb, pg_ctl): install Debian's postgresql package";
    return;
  }
  if (!bin_.empty()) bin_ += "/";
  char tmpl[] = "/tmp/fusekit_pg_XXXXXX";
  if (!mkdtemp(tmpl)) {
    reason_ = "cannot make a temporary folder";
    return;
  }
  dir_ = tmpl;
  { std::ofstream(dir_ + "/pw") << kPassword << "\n"; }
  if (geteuid() == 0) {
    // PostgreSQL will not run as root.
    user_ = "nobody";
    const passwd* pw = getpwnam(user_.c_str());
    if (!pw || std::system(("chown -R nobody " + dir_).c_str()) != 0) {
      reason_ = "running as root and cannot hand " + dir_ + " to user nobody for the server";
      return;
    }
    (void)pw;
  }
  // initdb is most of a start: its cluster is kept as a template (per user
  // and server version) that later servers copy.
  const std::string tmpl_dir = "/tmp/fusekit_pg_template_" + std::to_string(geteuid()) + "_" +
                               std::to_string(std::hash<std::string>{}(bin_));
  if (!std::filesystem::exists(tmpl_dir + "/PG_VERSION")) {
    if (run(bin_ + "initdb -D data -U fusekit --pwfile=pw --auth-local=trust --auth-host=scram-sha-256 -E UTF8 "
                   "--no-sync >initdb.log 2>&1") != 0) {
      reason_ = "initdb failed: " + read_tail(dir_ + "/initdb.log");
      return;
    }
    // Published whole by a rename, so a concurrent start never sees half of it.
    const std::string staging = tmpl_dir + ".staging." + std::to_string(getpid());
    if (std::system(("cp -a " + dir_ + "/data " + staging + " 2>/dev/null").c_str()) == 0) {
      std::error_code ec;
      std::filesystem::rename(staging, tmpl_dir, ec);
      if (ec) std::filesystem::remove_all(staging, ec);
    }
  } else if (std::system(("cp -a " + tmpl_dir + " " + dir_ + "/data").c_str()) != 0) {
    reason_ = "cannot copy the PostgreSQL template cluster " + tmpl_dir;
    return;
  }
  for (int attempt = 0; attempt < 3 && port_ == 0; ++attempt) {
    const int port = free_port();
    const std::string opts = "-p " + std::to_string(port) + " -k " + dir_ + " -c listen_addresses=127.0.0.1";
    if (run(bin_ + "pg_ctl -D data -l server.log -w -t 60 -o '" + opts + "' start >pg_ctl.log 2>&1") == 0)
      port_ = port;
  }
  if (port_ == 0) reason_ = "pg_ctl start failed: " + read_tail(dir_ + "/server.log");
}

PgServer::~PgServer() {
  if (port_ > 0) run(bin_ + "pg_ctl -D data -m immediate -w stop >/dev/null 2>&1");
  if (!dir_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
}

int PgServer::run(const std::string& command) const {
  const std::string in_dir = "cd " + dir_ + " && " + command;
  std::string quoted;
  for (char c : in_dir) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  const std::string line =
      user_.empty() ? "sh -c '" + quoted + "'" : "runuser -u " + user_ + " -- sh -c '" + quoted + "'";
  return std::system(line.c_str());
}

std::string PgServer::uri(const std::string& name, const std::string& password) const {
  return "postgresql://fusekit:" + password + "@127.0.0.1:" + std::to_string(port_) + "/" + name;
}

std::string PgServer::create_database(const std::string& name) const {
  PGconn* c = PQconnectdb(uri("postgres", kPassword).c_str());
  const bool up = PQstatus(c) == CONNECTION_OK;
  PQsetNoticeProcessor(c, [](void*, const char*) {}, nullptr);
  PGresult* r = up ? PQexec(c, ("DROP DATABASE IF EXISTS " + name).c_str()) : nullptr;
  PQclear(r);
  r = up ? PQexec(c, ("CREATE DATABASE " + name).c_str()) : nullptr;
  const bool ok = r && PQresultStatus(r) == PGRES_COMMAND_OK;
  const std::string err = PQerrorMessage(c);
  PQclear(r);
  PQfinish(c);
  if (!ok) throw std::runtime_error("CREATE DATABASE " + name + ": " + err);
  return uri(name, kPassword);
}

PgServer& shared_pg_server() {
  static PgServer server;
  return server;
}

}  // namespace fusekit
