#include "executor/runtime/watchdog.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace pw::exec {

void WaitBoard::Set(const std::string& text) {
  const size_t n = std::min(text.size(), kCapacity - 1);
  text_[n] = '\0';
  std::memcpy(text_, text.data(), n);
  text_[n] = '\0';
}

namespace {

const WaitBoard* g_board = nullptr;
char g_prefix[64] = {0};

void WriteAll(const char* s) {
  size_t n = std::strlen(s);
  while (n > 0) {
    ssize_t w = ::write(STDERR_FILENO, s, n);
    if (w <= 0) return;
    s += w;
    n -= static_cast<size_t>(w);
  }
}

// Async-signal-safe: write(2) and _exit(2) only.
void OnTerminate(int sig) {
  WriteAll(g_prefix);
  const char* text = g_board ? g_board->Text() : "";
  WriteAll(text[0] ? text : "not waiting on a peer");
  WriteAll(sig == SIGTERM ? " (SIGTERM from the launcher: a peer rank failed)\n" : " (interrupted)\n");
  ::_exit(128 + sig);
}

}  // namespace

void InstallTerminationReport(const WaitBoard* board, int rank) {
  g_board = board;
  std::string prefix = "pipewright run: rank " + std::to_string(rank) + " terminated while ";
  std::strncpy(g_prefix, prefix.c_str(), sizeof(g_prefix) - 1);
  struct sigaction sa;
  std::memset(&sa, 0, sizeof(sa));
  sa.sa_handler = &OnTerminate;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
}

}  // namespace pw::exec
