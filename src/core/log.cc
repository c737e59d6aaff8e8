#include "sylva/core/log.h"

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <mutex>

namespace sylva {
namespace {

std::mutex& log_mutex() {
  static std::mutex m;
  return m;
}
LogHandler& handler() {
  static LogHandler h;
  return h;
}

LogLevel threshold() {
  static const LogLevel t = [] {
    const char* env = std::getenv("SYLVA_LOG");
    if (env && std::strcmp(env, "debug") == 0) return LogLevel::debug;
    if (env && std::strcmp(env, "info") == 0) return LogLevel::info;
    return LogLevel::warning;
  }();
  return t;
}

constexpr const char* level_name(LogLevel l) {
  switch (l) {
    case LogLevel::debug: return "debug";
    case LogLevel::info: return "info";
    case LogLevel::warning: return "warning";
    case LogLevel::error: return "error";
  }
  return "?";
}

}  // namespace

void log(LogLevel level, std::string_view message) {
  std::lock_guard<std::mutex> lock(log_mutex());
  if (handler()) {
    handler()(level, message);
    return;
  }
  if (level < threshold()) return;
  std::cerr << "sylva " << level_name(level) << ": " << message << '\n';
}

LogHandler set_log_handler(LogHandler h) {
  std::lock_guard<std::mutex> lock(log_mutex());
  LogHandler old = std::move(handler());
  handler() = std::move(h);
  return old;
}

}  // namespace sylva
