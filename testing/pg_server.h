// A throwaway PostgreSQL server for tests and benchmarks: initdb into a
// temporary folder, pg_ctl start on a free loopback port with its socket in
// that folder, stopped and removed by the destructor. PostgreSQL refuses to
// run as root, so as root the server runs as `nobody`.
#pragma once

#include <string>

namespace fusekit {

class PgServer {
 public:
  // Starts a server; on failure available() is false and skip_reason() says
  // why (no server binaries, initdb or start failed with its log).
  PgServer();
  ~PgServer();
  PgServer(const PgServer&) = delete;
  PgServer& operator=(const PgServer&) = delete;

  bool available() const { return port_ > 0; }
  const std::string& skip_reason() const { return reason_; }
  // A URI of a fresh, empty database on the server (CREATE DATABASE name).
  std::string create_database(const std::string& name) const;
  // A URI of database `name` as user fusekit with `password`.
  std::string uri(const std::string& name, const std::string& password) const;
  static constexpr const char* kPassword = "s3cret-pw";

 private:
  int run(const std::string& command) const;  // as the server's user
  std::string bin_;
  std::string dir_;
  std::string user_;  // "" when not root
  int port_ = 0;
  std::string reason_;
};

// One server for a whole test program, started on first use.
PgServer& shared_pg_server();

}  // namespace fusekit
