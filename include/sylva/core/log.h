// Minimal logging with a replaceable handler (tests fail on warnings).
#pragma once

#include <functional>
#include <string_view>

namespace sylva {

enum class LogLevel : uint8_t { debug, info, warning, error };

using LogHandler = std::function<void(LogLevel, std::string_view)>;

/// Sends a message to the current handler (default: stderr for warning and
/// error, nothing for debug/info unless SYLVA_LOG=info|debug is set).
void log(LogLevel level, std::string_view message);
/// Installs a handler; returns the previous one. Pass nullptr to restore the default.
LogHandler set_log_handler(LogHandler handler);

}  // namespace sylva
